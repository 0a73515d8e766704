// kind/uninstall.yaml, the uninstall's cleanup DaemonSet, held to the
// manifests it undoes: it reaches every place kovs's DaemonSet writes on the
// node (the agent config's paths, the CNI directories, kovs's directories),
// with the least it needs, and its pods are not the agent's.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "agent/Config.hpp"
#include "tests/unit/kind/KindTestSupport.hpp"

using namespace kovs::test::kind;

namespace {

class UninstallManifest : public CompanionOverlay {
protected:
    void SetUp() override {
        CompanionOverlay::SetUp();
        auto docs = loadDocuments(src_ / "kind/uninstall.yaml");
        ASSERT_EQ(docs.size(), 1u) << "kind/uninstall.yaml: one DaemonSet, applied after the manifests";
        ASSERT_TRUE(docs.count("DaemonSet/kovs-cleanup"));
        cleanupDs_ = docs["DaemonSet/kovs-cleanup"];
        cleanupSpec_ = cleanupDs_["spec"]["template"]["spec"];
    }
    YAML::Node cleanupDs_, cleanupSpec_;
};

TEST_F(UninstallManifest, ReachesEveryPathTheAgentsDaemonSetWritesOnTheNode) {
    auto cleanup = containerNamed(cleanupSpec_, "cleanup");
    auto install = containerNamed(podSpec_, "install-cni");
    auto agent = containerNamed(podSpec_, "kovs-agent");
    EXPECT_EQ(strings(cleanup["command"]), (std::vector<std::string>{"kovs-node-init", "uninstall"}));
    EXPECT_EQ(cleanup["image"].as<std::string>(), install["image"].as<std::string>()) << "kovs-kind --image substitutes it";
    // The ConfigMap and the CNI directories where kovs-node-init finds them.
    for (const char* path : {"/etc/kovs-template", "/etc/kovs"}) EXPECT_EQ(mountOf(cleanup, path), mountOf(install, path)) << path;
    // Every node directory install-cni writes (the CNI dirs, /opt/kovs) is
    // reached at the same path, through a mount of it or of a parent.
    for (const auto& m : install["volumeMounts"]) {
        auto path = m["mountPath"].as<std::string>(), host = hostPathAt(podSpec_, install, path);
        if (host.empty()) continue;
        bool reached = false;
        for (const auto& c : cleanup["volumeMounts"]) {
            auto at = c["mountPath"].as<std::string>(), from = hostPathAt(cleanupSpec_, cleanup, at);
            if (!from.empty() && (path == at || path.rfind(at + "/", 0) == 0)) reached |= host == from + path.substr(at.size());
        }
        EXPECT_TRUE(reached) << path << " (" << host << " on the node) is not where install-cni has it";
    }
    // The agent config's paths, for kovs-agent --cleanup: the uplink record in
    // the OVS run directory, the networkd drop-ins.
    auto conf = kovs::agent::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate());
    for (const auto& path : {conf.ovs.rundir, conf.gateway.networkdDropinDir})
        EXPECT_EQ(hostPathAt(cleanupSpec_, cleanup, path), hostPathAt(podSpec_, agent, path)) << path;
    // The parents of every hostPath directory of kovs's own, at KOVS_HOST_DIR.
    for (const auto& [host, mount] : std::map<std::string, std::string>{
             {"/var/lib", "/host/var/lib"}, {"/run", "/host/run"}, {"/var/log", "/host/var/log"}, {"/opt", "/host/opt"}})
        EXPECT_EQ(hostPathAt(cleanupSpec_, cleanup, mount), host) << mount;
    for (const char* dir : {"/var/lib/kovs/openvswitch", "/var/run/kovs", "/var/log/kovs", "/opt/kovs"}) {
        bool used = false;
        for (const auto& v : podSpec_["volumes"]) used |= v["hostPath"] && v["hostPath"]["path"].as<std::string>() == dir;
        EXPECT_TRUE(used) << dir << ": the agent's DaemonSet no longer writes there; kovs-node-init uninstall removes it";
    }
    // Companion mode: the conflist kovs was chained into, as the overlay says.
    auto chain = containerNamed(patches_["DaemonSet/kovs-agent"]["spec"]["template"]["spec"], "install-cni");
    EXPECT_EQ(envValue(cleanup, "KOVS_CHAIN_CONFLIST"), envValue(chain, "KOVS_CHAIN_CONFLIST"));
}

TEST_F(UninstallManifest, AsksForTheLeastItNeedsAndIsNotTheAgentsPods) {
    EXPECT_EQ(cleanupDs_["metadata"]["namespace"].as<std::string>(), ds_["metadata"]["namespace"].as<std::string>());
    EXPECT_EQ(cleanupSpec_["serviceAccountName"].as<std::string>(), podSpec_["serviceAccountName"].as<std::string>());
    EXPECT_EQ(cleanupSpec_["securityContext"]["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");
    EXPECT_FALSE(cleanupSpec_["automountServiceAccountToken"].as<bool>());
    std::set<std::string> withToken;
    for (const auto& c : allContainers(cleanupSpec_)) {
        auto caps = c["securityContext"]["capabilities"];
        EXPECT_EQ(strings(caps["drop"]), std::vector<std::string>{"ALL"}) << c["name"];
        EXPECT_FALSE(c["securityContext"]["privileged"].as<bool>()) << c["name"];
        if (!mountOf(c, "/var/run/secrets/kubernetes.io/serviceaccount").empty()) withToken.insert(c["name"].as<std::string>());
    }
    EXPECT_EQ(strings(containerNamed(cleanupSpec_, "cleanup")["securityContext"]["capabilities"]["add"]),
              std::vector<std::string>{"NET_ADMIN"});
    EXPECT_FALSE(containerNamed(cleanupSpec_, "done")["securityContext"]["capabilities"]["add"]);
    EXPECT_EQ(withToken, std::set<std::string>{"cleanup"});
    // kovs-kind waits for the agent's pods to end by its component label:
    // the cleanup's pods must not match it.
    auto agentLabels = ds_["spec"]["selector"]["matchLabels"];
    auto labels = cleanupDs_["spec"]["template"]["metadata"]["labels"];
    EXPECT_NE(labels["app.kubernetes.io/component"].as<std::string>(),
              agentLabels["app.kubernetes.io/component"].as<std::string>());
}

}  // namespace
