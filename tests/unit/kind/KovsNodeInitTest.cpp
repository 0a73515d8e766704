// kind/kovs-node-init, the init container's script, run for real on temp
// dirs: rendering agent.yaml and the conflist, installing kovs-cni, and in
// companion mode chaining kovs after the other CNI's config.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "agent/Config.hpp"
#include "cni/CniRequest.hpp"
#include "tests/unit/kind/KindTestSupport.hpp"

using namespace kovs::test::kind;

namespace {

TEST_F(KindFiles, InitScriptFillsInThePodCidrAndInstallsPluginThenConflist) {
    TempDir dir;
    auto r = nodeInit(dir, configMapData(configMap_), {{"KOVS_POD_CIDR", "10.244.3.0/24"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto rendered = Json::parse(readFile(dir / "net.d/10-kovs.conflist"));
    EXPECT_EQ(rendered["plugins"][0]["ipam"]["ranges"][0][0]["subnet"], "10.244.3.0/24");
    EXPECT_EQ(rendered.dump().find("usePodCidr"), std::string::npos);
    // containerd execs the binary named after the plugin's type.
    auto plugin = dir / "opt-cni-bin" / rendered["plugins"][0]["type"].get<std::string>();
    ASSERT_TRUE(fs::exists(plugin)) << plugin;
    EXPECT_NE(fs::status(plugin).permissions() & fs::perms::others_exec, fs::perms::none);
    // No temp files left next to what kubelet reads.
    for (const auto& e : fs::directory_iterator(dir / "net.d")) {
        EXPECT_EQ(e.path().filename(), "10-kovs.conflist") << "left behind: " << e.path();
    }
}

// kovsctl on the node (/opt/kovs), with the image's libraries and loader and
// this node's rendered config: it runs whatever the node's distribution, as
// `docker exec <node> /opt/kovs/bin/kovsctl doctor`, with the agent down too.
TEST_F(KindFiles, InitScriptInstallsKovsctlOnTheNodeWithItsLibrariesAndConfig) {
    TempDir dir;
    auto r = nodeInit(dir, configMapData(configMap_), {{"KOVS_POD_CIDR", "10.244.3.0/24"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto tools = dir / "opt-kovs";
    EXPECT_EQ(readFile(tools / "agent.yaml"), readFile(dir / "etc-kovs/agent.yaml"));
    ASSERT_TRUE(fs::exists(tools / "lib/kovsctl"));
    bool libc = false;
    for (const auto& e : fs::directory_iterator(tools / "lib")) libc |= e.path().filename().string().rfind("libc.so", 0) == 0;
    EXPECT_TRUE(libc) << "the libraries kovsctl links are not bundled";
    // Through a symlink, as a user might put it on PATH: the wrapper finds its bundle.
    fs::create_symlink(tools / "bin/kovsctl", dir / "kovsctl");
    auto run = runScript({(dir / "kovsctl").string(), "doctor"}, {{"PATH", "/usr/bin:/bin"}});
    ASSERT_EQ(run.exitCode, 0) << run.err;
    EXPECT_EQ(run.out, "--config " + (tools / "agent.yaml").string() + " doctor\n");
    auto other = runScript({(tools / "bin/kovsctl").string(), "status"}, {{"PATH", "/usr/bin:/bin"}, {"KOVS_CONFIG", "/etc/x.yaml"}});
    EXPECT_EQ(other.out, "--config /etc/x.yaml status\n");
    // ovs-ofctl, which doctor runs, bundled the same way and first on the wrapper's PATH.
    auto ofctl = runScript({(tools / "bin/ovs-ofctl").string(), "dump-flows", "br-int"}, {{"PATH", "/usr/bin:/bin"}});
    EXPECT_EQ(ofctl.out, "dump-flows br-int\n") << ofctl.err;
    EXPECT_NE(readFile(tools / "bin/kovsctl").find("PATH=$dir/bin:$PATH"), std::string::npos);
    for (const auto& e : fs::recursive_directory_iterator(tools))
        EXPECT_EQ(e.path().filename().string().find(".kovsctl."), std::string::npos) << "left behind: " << e.path();
}

// kind's ipFamily: dual gives each Node a /24 and a /64, in that order: the
// agent gets both, and host-local one range set per family, so every pod gets
// an address of each (the CNI spec's ranges: one address per range set).
TEST_F(KindFiles, InitScriptGivesADualStackNodeBothFamiliesInTheNodesOrder) {
    TempDir dir;
    fs::create_directories(dir / "sa");
    writeFile(dir / "sa/token", "t\n");
    writeFile(dir / "sa/ca.crt", "not a real CA\n");
    fs::create_directories(dir / "bin");
    writeFile(dir / "bin/curl", "#!/bin/sh\nwhile read -r _; do :; done\n"
                                "echo '{\"metadata\":{\"name\":\"kind-worker\"},\"spec\":{\"podCIDR\":\"10.244.1.0/24\","
                                "\"podCIDRs\":[\"10.244.1.0/24\",\"fd00:10:244:1::/64\"]}}'\n");
    fs::permissions(dir / "bin/curl", fs::perms::owner_all);
    auto r = nodeInit(dir, configMapData(configMap_),
                      {{"NODE_NAME", "kind-worker"}, {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                       {"KOVS_SERVICE_ACCOUNT_DIR", (dir / "sa").string()},
                       {"PATH", (dir / "bin").string() + ":/usr/bin:/bin"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto conf = kovs::agent::parseConfig(readFile(dir / "etc-kovs/agent.yaml"));
    EXPECT_EQ(kovs::joinPrefixes(conf.node.podCIDRs), "10.244.1.0/24, fd00:10:244:1::/64");
    auto rendered = Json::parse(readFile(dir / "net.d/10-kovs.conflist"));
    const auto& ranges = rendered["plugins"][0]["ipam"]["ranges"];
    ASSERT_EQ(ranges.size(), 2u) << ranges.dump();
    EXPECT_EQ(ranges[0], Json::parse(R"([{"subnet": "10.244.1.0/24"}])"));
    EXPECT_EQ(ranges[1], Json::parse(R"([{"subnet": "fd00:10:244:1::/64"}])"));
    // The same from KOVS_POD_CIDR, for tests and non-Kubernetes use.
    TempDir dir2;
    ASSERT_EQ(nodeInit(dir2, configMapData(configMap_), {{"KOVS_POD_CIDR", "10.244.2.0/24,fd00:10:244:2::/64"}}).exitCode, 0);
    EXPECT_EQ(Json::parse(readFile(dir2 / "net.d/10-kovs.conflist"))["plugins"][0]["ipam"]["ranges"].size(), 2u);
}

// The service-account token goes to the API server, never onto a command
// line: /proc/PID/cmdline is readable by every user on the node (issue 15,
// item 5). A stand-in curl records its argv and the headers it was handed
// (-H @FILE or -H @- for stdin, as curl reads them) and answers with a Node.
TEST_F(KindFiles, InitScriptKeepsTheTokenOffCurlsCommandLine) {
    TempDir dir;
    const std::string token = "eyJhbGciOiJSUzI1NiJ9.secret-token-value";
    fs::create_directories(dir / "sa");
    writeFile(dir / "sa/token", token + "\n");
    writeFile(dir / "sa/ca.crt", "not a real CA\n");
    fs::create_directories(dir / "bin");
    writeFile(dir / "bin/curl", R"(#!/bin/bash
log=$(dirname "$0")/..
printf '%s\n' "$@" > "$log/curl.argv"
: > "$log/curl.headers"
prev=
for a in "$@"; do
    if [ "$prev" = -H ] || [ "$prev" = --header ]; then
        case $a in @-) cat >> "$log/curl.headers" ;; @*) cat "${a#@}" >> "$log/curl.headers" ;; *) printf '%s\n' "$a" >> "$log/curl.headers" ;; esac
    fi
    prev=$a
done
printf '{"kind": "Node", "metadata": {"name": "kind-worker"}, "spec": {"podCIDR": "10.244.7.0/24"}}\n'
)");
    fs::permissions(dir / "bin/curl", fs::perms::owner_all);
    std::string path = (dir / "bin").string() + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
    auto r = nodeInit(dir, configMapData(configMap_),
                      {{"NODE_NAME", "kind-worker"}, {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                       {"KUBERNETES_SERVICE_PORT", "443"}, {"KOVS_SERVICE_ACCOUNT_DIR", (dir / "sa").string()},
                       {"PATH", path}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto argv = readFile(dir / "curl.argv");
    EXPECT_NE(argv.find("https://10.96.0.1:443/api/v1/nodes/kind-worker"), std::string::npos) << argv;
    EXPECT_EQ(argv.find(token), std::string::npos) << "the token is on curl's command line:\n" << argv;
    EXPECT_NE(readFile(dir / "curl.headers").find("Authorization: Bearer " + token), std::string::npos)
        << "curl was not given the token as a header";
    EXPECT_NE(readFile(dir / "etc-kovs/agent.yaml").find("podCIDRs: ['10.244.7.0/24']"), std::string::npos)
        << "an old cluster's spec.podCIDR alone is read too";
}

TEST_F(KindFiles, InitScriptRejectsBadInputAndInstallsNothing) {
    struct Case {
        std::map<std::string, std::string> env;
        std::string message;
    };
    std::vector<Case> cases = {
        {{{"KOVS_POD_CIDR", "10.244.3.0"}}, "KOVS_POD_CIDR: expected CIDRs"},
        {{{"KOVS_POD_CIDR", "10.244.3.0/24; rm -rf /"}}, "KOVS_POD_CIDR: expected CIDRs"},
        {{{"KOVS_POD_CIDR", "10.244.3.0/24,"}}, "KOVS_POD_CIDR: expected CIDRs"},
        {{{"KOVS_POD_CIDR", "10.244.3.0/24,fd00::/64']"}}, "KOVS_POD_CIDR: expected CIDRs"},
        {{}, "NODE_NAME is not set"},
        {{{"NODE_NAME", "kind-worker"}}, "KUBERNETES_SERVICE_HOST is not set"},
        {{{"KOVS_POD_CIDR", "10.244.3.0/24"}, {"KOVS_CNI_MODE", "main"}}, "KOVS_CNI_MODE: expected standalone or chained"},
    };
    for (const auto& c : cases) {
        TempDir dir;
        auto r = nodeInit(dir, configMapData(configMap_), c.env);
        EXPECT_NE(r.exitCode, 0);
        EXPECT_NE(r.err.find(c.message), std::string::npos) << "stderr: " << r.err;
        EXPECT_FALSE(fs::exists(dir / "net.d/10-kovs.conflist"));
        EXPECT_FALSE(fs::exists(dir / "opt-cni-bin/kovs"));
        EXPECT_FALSE(fs::exists(dir / "etc-kovs/agent.yaml"));
    }
}

TEST_F(CompanionOverlay, InitScriptChainsKovsIntoAntreasConflistOnce) {
    auto data = companionConfigMapData();
    TempDir dir;
    fs::create_directories(dir / "net.d");
    Json antrea = {{"cniVersion", "0.3.0"},
                   {"name", "antrea"},
                   {"plugins", {{{"type", "antrea"}, {"ipam", {{"type", "host-local"}}}}, {{"type", "portmap"}}}}};
    writeFile(dir / "net.d/10-antrea.conflist", antrea.dump(2));
    std::map<std::string, std::string> env = {
        {"KOVS_POD_CIDR", "10.244.1.0/24"}, {"KOVS_CNI_MODE", "chained"}, {"KOVS_CHAIN_CONFLIST", "10-antrea.conflist"}};
    for (int run = 0; run < 2; ++run) {
        auto r = nodeInit(dir, data, env);
        ASSERT_EQ(r.exitCode, 0) << "run " << run << ": " << r.err;
    }
    auto patched = Json::parse(readFile(dir / "net.d/10-antrea.conflist"));
    ASSERT_EQ(patched["plugins"].size(), 3u) << patched.dump();
    EXPECT_EQ(patched["plugins"][0], antrea["plugins"][0]);
    EXPECT_EQ(patched["plugins"][1], antrea["plugins"][1]);
    EXPECT_EQ(patched["plugins"][2], Json::parse(data.at("chained-plugin.json")));
    EXPECT_FALSE(fs::exists(dir / "net.d/10-kovs.conflist")) << "companion must not install a second network";
    EXPECT_TRUE(fs::exists(dir / "opt-cni-bin" / patched["plugins"][2]["type"].get<std::string>()))
        << "the chained entry's type names the installed binary";
    auto conf = kovs::agent::parseConfig(readFile(dir / "etc-kovs/agent.yaml"));
    EXPECT_EQ(kovs::joinPrefixes(conf.node.podCIDRs), "10.244.1.0/24");
    EXPECT_EQ(conf.mode, Config::Mode::Companion);
}

TEST_F(CompanionOverlay, InitScriptGivesUpClearlyWithoutTheOtherCni) {
    auto data = companionConfigMapData();
    TempDir dir;
    auto r = nodeInit(dir, data,
                      {{"KOVS_POD_CIDR", "10.244.1.0/24"}, {"KOVS_CNI_MODE", "chained"}, {"KOVS_WAIT_SECONDS", "0"}});
    EXPECT_NE(r.exitCode, 0);
    EXPECT_NE(r.err.find("10-antrea.conflist never appeared"), std::string::npos) << r.err;
}

// OVN-Kubernetes writes a single plugin's config, 10-ovn-kubernetes.conf (issue
// 16, defect 7): kovs is chained after it in a conflist made the way libcni's
// ConfListFromConf makes one, under a name the runtime picks first.
TEST_F(CompanionOverlay, InitScriptChainsAfterASinglePluginConfAsLibcniConvertsIt) {
    auto data = companionConfigMapData();
    TempDir dir;
    fs::create_directories(dir / "net.d");
    // What ovnkube-node writes (WriteCNIConfig), key order and all.
    const std::string ovnk = R"({"cniVersion":"0.4.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay","ipam":{},)"
                             R"("dns":{},"logFile":"/var/log/ovn-kubernetes/ovn-k8s-cni-overlay.log","logLevel":"4",)"
                             R"("logfile-maxsize":100,"logfile-maxbackups":5,"logfile-maxage":5})";
    writeFile(dir / "net.d/10-ovn-kubernetes.conf", ovnk);
    std::map<std::string, std::string> env = {
        {"KOVS_POD_CIDR", "10.244.1.0/24"}, {"KOVS_CNI_MODE", "chained"}, {"KOVS_CHAIN_CONFLIST", "10-ovn-kubernetes.conf"}};
    for (int run = 0; run < 2; ++run) {
        auto r = nodeInit(dir, data, env);
        ASSERT_EQ(r.exitCode, 0) << "run " << run << ": " << r.err;
    }
    EXPECT_EQ(readFile(dir / "net.d/10-ovn-kubernetes.conf"), ovnk) << "the other CNI's file is never changed";
    auto derived = dir / "net.d/00-kovs-10-ovn-kubernetes.conflist";
    ASSERT_TRUE(fs::exists(derived));
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir / "net.d")) files.push_back(e.path().filename().string());
    std::sort(files.begin(), files.end());
    EXPECT_EQ(files.front(), "00-kovs-10-ovn-kubernetes.conflist") << "containerd takes the first file in name order";
    auto list = Json::parse(readFile(derived));
    Json original = Json::parse(ovnk);
    EXPECT_EQ(list, Json({{"name", "ovn-kubernetes"}, {"cniVersion", "0.4.0"},
                          {"plugins", {original, Json::parse(data.at("chained-plugin.json"))}}}))
        << "libcni: {name, cniVersion, plugins: [the whole config]}, then kovs";
    // The chained entry, as the runtime hands it to kovs-cni after OVN-K's ADD.
    Json conf = pluginConfig(list, list["plugins"][1]);
    conf["prevResult"] = {{"cniVersion", "0.4.0"},
                          {"interfaces", {{{"name", "eth0"}, {"sandbox", "/var/run/netns/cni-1"}}}},
                          {"ips", {{{"version", "4"}, {"address", "10.244.1.5/24"}, {"interface", 0}}}}};
    EXPECT_NO_THROW(kovs::cni::CniRequestParser::parseConfig(conf.dump(), kovs::cni::Command::Add));

    // ovnkube-node rewrites its file on a restart: the chain follows it.
    auto changed = original;
    changed["logLevel"] = "5";
    writeFile(dir / "net.d/10-ovn-kubernetes.conf", changed.dump());
    ASSERT_EQ(nodeInit(dir, data, env).exitCode, 0);
    EXPECT_EQ(Json::parse(readFile(derived))["plugins"][0], changed);
    // And when it is gone, so is the chain (a node must not keep a network that left).
    fs::remove(dir / "net.d/10-ovn-kubernetes.conf");
    env["KOVS_WAIT_SECONDS"] = "0";
    auto r = nodeInit(dir, data, env);
    EXPECT_NE(r.exitCode, 0);
    EXPECT_NE(r.err.find("10-ovn-kubernetes.conf never appeared"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(derived));
}

TEST_F(CompanionOverlay, InitScriptRefusesAConfItCannotChainAfter) {
    auto data = companionConfigMapData();
    struct Bad {
        std::string file, text, error;
    };
    for (const auto& bad : std::vector<Bad>{
             {"10-x.conf", R"({"cniVersion":"1.0.0","name":"x","plugins":[{"type":"x"}]})", "a conflist in a single-plugin file"},
             {"10-x.conf", R"({"cniVersion":"1.0.0","name":"x"})", "no \"type\""},
             {"10-x.json", R"({"cniVersion":"1.0.0","type":"x"})", "no \"name\""},
             {"10-x.conf", "not json", "cannot chain kovs after it"},
             {"10-x.yaml", "{}", "expected a .conflist, .conf or .json file"}}) {
        TempDir dir;
        fs::create_directories(dir / "net.d");
        writeFile(dir / "net.d" / bad.file, bad.text);
        auto r = nodeInit(dir, data, {{"KOVS_POD_CIDR", "10.244.1.0/24"}, {"KOVS_CNI_MODE", "chained"}, {"KOVS_CHAIN_CONFLIST", bad.file}});
        EXPECT_NE(r.exitCode, 0) << bad.text;
        EXPECT_NE(r.err.find(bad.error), std::string::npos) << bad.text << ": " << r.err;
        size_t left = 0;
        for (const auto& e : fs::directory_iterator(dir / "net.d")) left += e.path().filename() != bad.file;
        EXPECT_EQ(left, 0u) << bad.text << ": a rejected config leaves nothing behind";
    }
}

// OVN-Kubernetes allocates node subnets itself: its Nodes may have no
// spec.podCIDR, and companion mode does not need one.
TEST_F(CompanionOverlay, InitScriptGoesOnWithoutAPodCidrInCompanionModeOnly) {
    auto data = companionConfigMapData();
    TempDir dir;
    fs::create_directories(dir / "bin");
    fs::create_directories(dir / "sa");
    writeFile(dir / "sa/token", "t");
    writeFile(dir / "sa/ca.crt", "c");
    // The API server's answer for a Node without spec.podCIDR. Like curl
    // with -H @-, the stand-in reads its stdin: a reader that left early
    // would fail the script's printf | curl pipeline (pipefail) at random.
    writeFile(dir / "bin/curl", "#!/bin/sh\nwhile read -r _; do :; done\necho '{\"metadata\":{\"name\":\"n1\"},\"spec\":{}}'\n");
    fs::permissions(dir / "bin/curl", fs::perms::owner_all);
    fs::create_directories(dir / "net.d");
    writeFile(dir / "net.d/10-antrea.conflist", R"({"cniVersion":"0.3.0","name":"antrea","plugins":[{"type":"antrea"}]})");
    std::map<std::string, std::string> env = {{"PATH", (dir / "bin").string()}, {"NODE_NAME", "n1"},
                                              {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                              {"KOVS_SERVICE_ACCOUNT_DIR", (dir / "sa").string()},
                                              {"KOVS_CNI_MODE", "chained"}, {"KOVS_WAIT_SECONDS", "0"}};
    auto r = nodeInit(dir, data, env);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto conf = kovs::agent::parseConfig(readFile(dir / "etc-kovs/agent.yaml"));
    EXPECT_TRUE(conf.node.podCIDRs.empty());
    EXPECT_EQ(conf.mode, Config::Mode::Companion);
    env["KOVS_CNI_MODE"] = "standalone";
    auto standalone = nodeInit(dir, configMapData(configMap_), env);
    EXPECT_NE(standalone.exitCode, 0) << "standalone mode needs the podCIDR for its IPAM";
    EXPECT_NE(standalone.err.find("has no spec.podCIDRs yet"), std::string::npos) << standalone.err;
}

// The uninstall's cleanup pod (kind/uninstall.yaml): the conflist and the
// plugin go first, then kovs-agent --cleanup runs with the rendered config,
// then kovs's directories on the node, by name: nothing else of the node's.
class Uninstall : public CompanionOverlay {
protected:
    // A kovs-agent that records how it was called and exits with `rc`.
    void fakeAgent(const TempDir& dir, int rc) const {
        fs::create_directories(dir / "bin");
        writeFile(dir / "bin/kovs-agent", "#!/bin/sh\necho \"$@\" > " + (dir / "agent-args").string() + "\nexit " +
                                               std::to_string(rc) + "\n");
        fs::permissions(dir / "bin/kovs-agent", fs::perms::owner_all);
    }
    // The node's /var/lib, /run and /var/log as the cleanup pod mounts them.
    void nodeDirs(const TempDir& dir) const {
        for (const char* d : {"host/var/lib/kovs/openvswitch", "host/run/kovs", "host/run/openvswitch", "host/var/log/kovs",
                              "host/var/log/openvswitch", "host/opt/kovs/bin", "host/var/lib/containerd", "host/run/containerd",
                              "host/opt/containerd"})
            fs::create_directories(dir / d);
        writeFile(dir / "host/var/lib/kovs/openvswitch/conf.db", "OVSDB");
        writeFile(dir / "host/run/openvswitch/kovs-uplink.json", "{}");
    }
    std::map<std::string, std::string> env(const TempDir& dir, std::map<std::string, std::string> more) const {
        more["PATH"] = (dir / "bin").string();
        more["KOVS_HOST_DIR"] = (dir / "host").string();
        return more;
    }
};

TEST_F(Uninstall, StandaloneRemovesTheConflistPluginAndKovsDirsAndRunsTheAgentsCleanup) {
    TempDir dir;
    auto data = configMapData(configMap_);
    ASSERT_EQ(nodeInit(dir, data, {{"KOVS_POD_CIDR", "10.244.3.0/24"}}).exitCode, 0);
    ASSERT_TRUE(fs::exists(dir / "net.d/10-kovs.conflist"));
    fakeAgent(dir, 0);
    nodeDirs(dir);
    auto r = nodeInit(dir, data, env(dir, {{"KOVS_POD_CIDR", "10.244.3.0/24"}}), "uninstall");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_FALSE(fs::exists(dir / "net.d/10-kovs.conflist"));
    EXPECT_FALSE(fs::exists(dir / "opt-cni-bin/kovs"));
    EXPECT_EQ(readFile(dir / "agent-args"), "--config " + (dir / "etc-kovs/agent.yaml").string() + " --cleanup\n");
    for (const char* gone : {"var/lib/kovs", "run/kovs", "run/openvswitch", "var/log/kovs", "var/log/openvswitch", "opt/kovs"})
        EXPECT_FALSE(fs::exists(dir / "host" / gone)) << gone;
    EXPECT_TRUE(fs::exists(dir / "host/var/lib/containerd"));
    EXPECT_TRUE(fs::exists(dir / "host/opt/containerd"));
    EXPECT_TRUE(fs::exists(dir / "host/run/containerd"));
    // Again, on a node with nothing left: nothing to do, no error.
    auto again = nodeInit(dir, data, env(dir, {{"KOVS_POD_CIDR", "10.244.3.0/24"}}), "uninstall");
    EXPECT_EQ(again.exitCode, 0) << again.err;
}

// The agent's cleanup failed (the uplink could not be restored): the state
// directories stay, the uplink record with them, so that a second run can
// still give eth0 its addressing back.
TEST_F(Uninstall, AFailedAgentCleanupKeepsTheNodesStateForASecondRun) {
    TempDir dir;
    fakeAgent(dir, 1);
    nodeDirs(dir);
    auto r = nodeInit(dir, configMapData(configMap_), env(dir, {{"KOVS_POD_CIDR", "10.244.3.0/24"}}), "uninstall");
    EXPECT_NE(r.exitCode, 0);
    EXPECT_NE(r.err.find("kovs-agent --cleanup failed"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::exists(dir / "host/run/openvswitch/kovs-uplink.json"));
    EXPECT_TRUE(fs::exists(dir / "host/var/lib/kovs/openvswitch/conf.db"));
}

TEST_F(Uninstall, WithoutTheNodesDirectoriesMountedItSaysSo) {
    TempDir dir;
    fakeAgent(dir, 0);
    auto r = nodeInit(dir, configMapData(configMap_), env(dir, {{"KOVS_POD_CIDR", "10.244.3.0/24"}}), "uninstall");
    EXPECT_NE(r.exitCode, 0);
    EXPECT_NE(r.err.find("the node's /var is not mounted here"), std::string::npos) << r.err;
}

// Companion: kovs leaves the other CNI's chain, whose own plugins stay, and
// the Open vSwitch directories (that CNI's OVS) stay too.
TEST_F(Uninstall, CompanionTakesKovsOutOfTheOtherCnisChainOnly) {
    auto data = companionConfigMapData();
    TempDir dir;
    fs::create_directories(dir / "net.d");
    Json antrea = {{"cniVersion", "0.3.0"}, {"name", "antrea"}, {"plugins", {{{"type", "antrea"}}, {{"type", "portmap"}}}}};
    writeFile(dir / "net.d/10-antrea.conflist", antrea.dump(2));
    std::map<std::string, std::string> chained = {{"KOVS_POD_CIDR", "10.244.1.0/24"}, {"KOVS_CNI_MODE", "chained"}};
    ASSERT_EQ(nodeInit(dir, data, chained).exitCode, 0);
    ASSERT_EQ(Json::parse(readFile(dir / "net.d/10-antrea.conflist"))["plugins"].size(), 3u);
    fakeAgent(dir, 0);
    nodeDirs(dir);
    // The cleanup pod's manifest has no KOVS_CNI_MODE: the mode is the agent config's.
    auto r = nodeInit(dir, data, env(dir, {{"KOVS_POD_CIDR", "10.244.1.0/24"}}), "uninstall");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(Json::parse(readFile(dir / "net.d/10-antrea.conflist")), antrea);
    EXPECT_FALSE(fs::exists(dir / "opt-cni-bin/kovs"));
    EXPECT_FALSE(fs::exists(dir / "host/var/lib/kovs"));
    EXPECT_TRUE(fs::exists(dir / "host/run/openvswitch")) << "next to another CNI, Open vSwitch is that CNI's";
    EXPECT_TRUE(fs::exists(dir / "host/var/log/openvswitch"));
}

}  // namespace
