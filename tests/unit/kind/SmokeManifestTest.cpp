// kind/smoke.yaml, the smoke test's objects, held to the API's shapes and to
// kind/kovs-kind, which applies them and then finds and reaches them by name,
// label, port and DNS name; the probe command it runs is one kovsctl accepts.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/unit/kind/KindTestSupport.hpp"

using namespace kovs::test::kind;

namespace {

class SmokeManifest : public ::testing::Test {
protected:
    void SetUp() override {
        src_ = sourceDir();
        docs_ = loadDocuments(src_ / "kind/smoke.yaml");
        ASSERT_EQ(docs_.size(), 3u) << "Namespace, DaemonSet, Service";
        for (const char* key : {"Namespace/kovs-smoke", "DaemonSet/kovs-smoke", "Service/kovs-smoke"})
            ASSERT_TRUE(docs_.count(key)) << key;
        ds_ = docs_["DaemonSet/kovs-smoke"];
        svc_ = docs_["Service/kovs-smoke"];
        pod_ = ds_["spec"]["template"]["spec"];
        script_ = readFile(src_ / "kind/kovs-kind");
    }
    // A readonly value kovs-kind sets: `NAME=value`.
    std::string kovsKindValue(const std::string& name) {
        std::smatch m;
        if (!std::regex_search(script_, m, std::regex(" " + name + "=([^ \n]+)"))) return "";
        return m[1];
    }
    fs::path src_;
    std::map<std::string, YAML::Node> docs_;
    YAML::Node ds_, svc_, pod_;
    std::string script_;
};

TEST_F(SmokeManifest, HasTheApisShapes) {
    std::map<std::string, std::string> apiVersion = {{"Namespace", "v1"}, {"DaemonSet", "apps/v1"}, {"Service", "v1"}};
    for (const auto& [key, doc] : docs_) {
        auto kind = doc["kind"].as<std::string>();
        EXPECT_EQ(doc["apiVersion"].as<std::string>(), apiVersion[kind]) << key;
        // DNS-1123 labels: the Service name becomes a DNS name.
        EXPECT_TRUE(std::regex_match(doc["metadata"]["name"].as<std::string>(), std::regex("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"))) << key;
        if (kind != "Namespace") {
            EXPECT_EQ(doc["metadata"]["namespace"].as<std::string>(), "kovs-smoke") << key;
        }
        EXPECT_EQ(doc["metadata"]["labels"]["app.kubernetes.io/component"].as<std::string>(), "smoke-test") << key;
    }
    // apps/v1 requires the selector to match the template's labels.
    auto labels = ds_["spec"]["template"]["metadata"]["labels"];
    for (const auto& kv : ds_["spec"]["selector"]["matchLabels"])
        EXPECT_EQ(labels[kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
    for (const auto& kv : svc_["spec"]["selector"])
        EXPECT_EQ(labels[kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>()) << "the Service selects the pods";
    EXPECT_EQ(svc_["spec"]["type"].as<std::string>(), "NodePort");
    auto containers = allContainers(pod_);
    ASSERT_EQ(containers.size(), 1u);
    auto c = containers[0];
    // targetPort by name: the container's port of that name.
    auto target = svc_["spec"]["ports"][0]["targetPort"].as<std::string>();
    bool named = false;
    for (const auto& p : c["ports"]) named |= p["name"].as<std::string>() == target && p["protocol"].as<std::string>() == "TCP";
    EXPECT_TRUE(named) << "targetPort " << target << " names no TCP port of the container";
    EXPECT_FALSE(pod_["hostNetwork"]) << "the smoke pods must be on the pod network";
}

TEST_F(SmokeManifest, IsWhatKovsKindReaches) {
    auto c = allContainers(pod_)[0];
    auto port = kovsKindValue("smoke_port");
    ASSERT_FALSE(port.empty());
    EXPECT_EQ(strings(c["command"]), (std::vector<std::string>{"kovsctl", "probe", "serve", "--port", port}));
    EXPECT_EQ(c["ports"][0]["containerPort"].as<std::string>(), port);
    EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"].as<std::string>(), port);
    // The ClusterIP and DNS checks go to port 80 of the Service, by the name kovs-kind probes.
    EXPECT_EQ(svc_["spec"]["ports"][0]["port"].as<int>(), 80);
    // (An IPv6 ClusterIP goes in brackets: host_port.)
    EXPECT_NE(script_.find("\"svc=tcp:$(host_port \"$cluster_ip\" 80)\" \"dns=tcp:$smoke_dns:80\""), std::string::npos);
    EXPECT_EQ(kovsKindValue("smoke_dns"), svc_["metadata"]["name"].as<std::string>() + "." +
                                               svc_["metadata"]["namespace"].as<std::string>() + ".svc.cluster.local");
    EXPECT_NE(script_.find("--selector app.kubernetes.io/component=smoke-test"), std::string::npos);
    EXPECT_NE(script_.find("rollout status daemonset/" + ds_["metadata"]["name"].as<std::string>()), std::string::npos);
    // The image kovs-kind loaded (its --image replaces this line); never pulled.
    EXPECT_EQ(c["image"].as<std::string>(), "kovs:dev");
    EXPECT_EQ(c["imagePullPolicy"].as<std::string>(), "IfNotPresent");
    // On every node (the control plane's taint too), with the least it needs:
    // NET_RAW for the ICMP echo.
    EXPECT_EQ(pod_["tolerations"][0]["operator"].as<std::string>(), "Exists");
    EXPECT_EQ(strings(c["securityContext"]["capabilities"]["drop"]), std::vector<std::string>{"ALL"});
    EXPECT_EQ(strings(c["securityContext"]["capabilities"]["add"]), std::vector<std::string>{"NET_RAW"});
    EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>());
    EXPECT_FALSE(pod_["automountServiceAccountToken"].as<bool>());
}

// The command the pods run and the one kovs-kind execs, as kovsctl parses
// them (--help would hide a bad argument: CLI11 answers it first). KOVSCTL is
// the program, or in a cross build the emulator's command line and the
// program (words separated by spaces).
TEST_F(SmokeManifest, KovsctlAcceptsItsCommands) {
    const char* env = std::getenv("KOVSCTL");
    if (!env) GTEST_SKIP() << "KOVSCTL is not set (meson test sets it)";
    std::vector<std::string> kovsctl;
    std::istringstream words(env);
    for (std::string w; words >> w;) kovsctl.push_back(w);
    auto command = [&](std::vector<std::string> args) {
        args.insert(args.begin(), kovsctl.begin(), kovsctl.end());
        return args;
    };
    auto serve = strings(allContainers(pod_)[0]["command"]);
    serve.erase(serve.begin());  // the image's path of kovsctl
    serve = command(serve);
    serve.insert(serve.begin(), {"timeout", "0.5"});
    auto r = kovs::runProcess(serve);
    // Still serving when timeout ends it; or the port is taken on this machine.
    bool served = r.exitCode == 124 && r.out.find("kovsctl probe serve: answering on port ") != std::string::npos;
    bool taken = r.exitCode == 2 && r.err.find("kovsctl probe: listen on port ") != std::string::npos;
    EXPECT_TRUE(served || taken) << r.exitCode << ": " << r.out << r.err;
    // Port 1 of loopback refuses at once: a parsed command that ran its probe.
    auto check = kovs::runProcess(command({"probe", "check", "--timeout", "2", "pod/kovs-worker=tcp:127.0.0.1:1"}));
    EXPECT_EQ(check.exitCode, 1) << check.out << check.err;
    EXPECT_NE(check.out.find("  FAIL  pod/kovs-worker refused by 127.0.0.1:1"), std::string::npos) << check.out;
}

}  // namespace
