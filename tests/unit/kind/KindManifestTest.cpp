// The kind/ files are deployed where nothing here can run them (a real kind
// cluster), so this test reads them and holds them to the code: the agent
// config they ship is one kovs::parseConfig accepts, the CNI entries are ones
// kovs-cni's own parser accepts, and names, labels, volumes, ports, images and
// capabilities agree across the files. The scripts run for real, on temp dirs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent/Config.hpp"
#include "base/Error.hpp"
#include "base/Process.hpp"
#include "cni/CniError.hpp"
#include "cni/CniRequest.hpp"

namespace fs = std::filesystem;
using Json = nlohmann::json;
using kovs::Config;

namespace {

fs::path sourceDir() {
    const char* dir = std::getenv("KOVS_SOURCE_DIR");
    if (!dir || !*dir) throw kovs::Error("KOVS_SOURCE_DIR is not set (meson test sets it to the source root)");
    return dir;
}

std::string readFile(const fs::path& p) {
    std::ifstream f(p);
    if (!f) throw kovs::Error("read " + p.string() + ": cannot open");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void writeFile(const fs::path& p, const std::string& text) {
    std::ofstream f(p);
    f << text;
    if (!f) throw kovs::Error("write " + p.string() + ": failed");
}

class TempDir {
public:
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "kovs-kind-test.XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw kovs::Error("mkdtemp " + tmpl + ": failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

// Every document of a multi-document YAML file, keyed "Kind/name".
std::map<std::string, YAML::Node> loadDocuments(const fs::path& p) {
    std::map<std::string, YAML::Node> out;
    for (const auto& doc : YAML::LoadAll(readFile(p))) {
        if (!doc || doc.IsNull()) continue;
        auto key = doc["kind"].as<std::string>() + "/" + doc["metadata"]["name"].as<std::string>();
        EXPECT_FALSE(out.count(key)) << p << ": " << key << " appears twice";
        out[key] = doc;
    }
    return out;
}

std::vector<std::string> strings(const YAML::Node& seq) {
    std::vector<std::string> out;
    if (seq) {
        for (const auto& s : seq) out.push_back(s.as<std::string>());
    }
    return out;
}

// All containers of a pod spec, init containers included.
std::vector<YAML::Node> allContainers(const YAML::Node& podSpec) {
    std::vector<YAML::Node> out;
    for (const auto* key : {"initContainers", "containers"}) {
        if (podSpec[key]) {
            for (const auto& c : podSpec[key]) out.push_back(c);
        }
    }
    return out;
}

YAML::Node containerNamed(const YAML::Node& podSpec, const std::string& name) {
    for (const auto& c : allContainers(podSpec)) {
        if (c["name"].as<std::string>() == name) return c;
    }
    throw kovs::Error("no container named " + name);
}

std::string envValue(const YAML::Node& container, const std::string& name) {
    for (const auto& e : container["env"]) {
        if (e["name"].as<std::string>() == name) return e["value"] ? e["value"].as<std::string>() : "";
    }
    return "";
}

// "127.0.0.1:9474" -> {"127.0.0.1", 9474}
std::pair<std::string, int> splitHostPort(const std::string& addr) {
    auto colon = addr.rfind(':');
    if (colon == std::string::npos) throw kovs::Error("metricsAddress " + addr + ": no port");
    return {addr.substr(0, colon), std::stoi(addr.substr(colon + 1))};
}

// What the container runtime hands a plugin of a conflist: the plugin's own
// object plus the list's cniVersion and name (and, chained, a prevResult).
Json pluginConfig(const Json& conflist, const Json& plugin) {
    Json c = plugin;
    c["cniVersion"] = conflist.at("cniVersion");
    c["name"] = conflist.at("name");
    return c;
}

kovs::ProcessResult runScript(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
    kovs::ProcessOptions opts;
    opts.env = env;
    opts.stdinData = "";
    return kovs::runProcess(argv, opts);
}

class KindFiles : public ::testing::Test {
protected:
    void SetUp() override {
        src_ = sourceDir();
        docs_ = loadDocuments(src_ / "kind/manifests/kovs.yaml");
        ASSERT_TRUE(docs_.count("ConfigMap/kovs-config")) << "kind/manifests/kovs.yaml has no ConfigMap kovs-config";
        ASSERT_TRUE(docs_.count("DaemonSet/kovs-agent")) << "kind/manifests/kovs.yaml has no DaemonSet kovs-agent";
        configMap_ = docs_["ConfigMap/kovs-config"];
        ds_ = docs_["DaemonSet/kovs-agent"];
        podSpec_ = ds_["spec"]["template"]["spec"];
    }

    std::string agentTemplate() const { return configMap_["data"]["agent.yaml"].as<std::string>(); }
    Json conflist() const { return Json::parse(configMap_["data"]["10-kovs.conflist"].as<std::string>()); }

    // Runs kind/kovs-node-init (the init container's script) on temp dirs
    // standing in for the ConfigMap mount, /etc/kovs and the node's CNI dirs.
    kovs::ProcessResult nodeInit(const TempDir& dir, const std::map<std::string, std::string>& data,
                                 std::map<std::string, std::string> env, const std::string& command = "init") const {
        fs::create_directories(dir.path() / "template");
        for (const auto& [key, text] : data) writeFile(dir.path() / "template" / key, text);
        writeFile(dir.path() / "kovs-cni", "#!/bin/sh\nexit 0\n");
        fs::permissions(dir.path() / "kovs-cni", fs::perms::owner_all);
        std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
        env["PATH"] = env.count("PATH") ? env["PATH"] + ":" + path : path;  // a test's own tools first
        env["KOVS_TEMPLATE_DIR"] = (dir.path() / "template").string();
        env["KOVS_CONFIG_DIR"] = (dir.path() / "etc-kovs").string();
        env["KOVS_CNI_BINARY"] = (dir.path() / "kovs-cni").string();
        env["KOVS_CNI_BIN_DIR"] = (dir.path() / "opt-cni-bin").string();
        env["KOVS_CNI_NET_DIR"] = (dir.path() / "net.d").string();
        return runScript({(src_ / "kind/kovs-node-init").string(), command}, env);
    }

    std::map<std::string, std::string> configMapData(const YAML::Node& cm) const {
        std::map<std::string, std::string> out;
        for (const auto& kv : cm["data"]) out[kv.first.as<std::string>()] = kv.second.as<std::string>();
        return out;
    }

    fs::path src_;
    std::map<std::string, YAML::Node> docs_;
    YAML::Node configMap_, ds_, podSpec_;
};

TEST_F(KindFiles, EveryManifestIsNamedAndNamespacedInKovsSystem) {
    static const std::set<std::string> clusterScoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"};
    ASSERT_TRUE(docs_.count("Namespace/kovs-system"));
    for (const auto& [key, doc] : docs_) {
        EXPECT_TRUE(doc["apiVersion"]) << key << ": no apiVersion";
        if (clusterScoped.count(doc["kind"].as<std::string>())) {
            EXPECT_FALSE(doc["metadata"]["namespace"]) << key << " is cluster-scoped";
        } else {
            ASSERT_TRUE(doc["metadata"]["namespace"]) << key << ": no namespace";
            EXPECT_EQ(doc["metadata"]["namespace"].as<std::string>(), "kovs-system") << key;
        }
    }
}

TEST_F(KindFiles, AgentConfigNeedsOnlyThePodCidrThatTheInitContainerAdds) {
    // One ConfigMap serves every node, so it cannot carry a podCIDR...
    try {
        kovs::parseConfig(agentTemplate());
        FAIL() << "the agent.yaml template parsed without a podCIDR; then kovs-node-init's rendering is not needed";
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("node.podCIDR"), std::string::npos) << e.what();
    }
    // ...and with the node's podCIDR prepended, as kovs-node-init does, it parses.
    TempDir dir;
    auto r = nodeInit(dir, configMapData(configMap_), {{"KOVS_POD_CIDR", "10.244.2.0/24"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto rendered = readFile(dir.path() / "etc-kovs/agent.yaml");
    Config c;
    ASSERT_NO_THROW(c = kovs::parseConfig(rendered)) << rendered;
    EXPECT_EQ(c.node.podCIDR, "10.244.2.0/24");
    EXPECT_EQ(c.mode, Config::Mode::Standalone);
    EXPECT_FALSE(c.ovs.manage) << "the pod's ovs container runs the daemons, not the agent";
    EXPECT_EQ(c.uplink.mode, Config::UplinkMode::Shim);
    EXPECT_EQ(c.peers.source, Config::PeerSourceKind::Kubernetes);
    EXPECT_TRUE(c.peers.kubeconfig.empty()) << "in-cluster service account expected";
    EXPECT_TRUE(c.gateway.guard);
}

TEST_F(KindFiles, ConflistIsOneKovs_cniAcceptsAndAgreesWithTheAgent) {
    Json list;
    ASSERT_NO_THROW(list = conflist());
    EXPECT_EQ(list.at("cniVersion"), "1.0.0");
    ASSERT_TRUE(list.at("plugins").is_array() && !list.at("plugins").empty());
    const auto& kovsPlugin = list["plugins"][0];
    EXPECT_EQ(kovsPlugin.at("type"), "kovs") << "kovs must be first: it creates the interface";

    const auto& ipam = kovsPlugin.at("ipam");
    EXPECT_EQ(ipam.at("type"), "host-local");
    EXPECT_EQ(ipam.at("ranges")[0][0].at("subnet"), "usePodCidr");
    EXPECT_FALSE(ipam.at("ranges")[0][0].contains("gateway")) << "gw0 is the first address, host-local's default";

    kovs::cni::NetConf nc;
    auto text = pluginConfig(list, kovsPlugin).dump();
    try {
        nc = kovs::cni::CniRequestParser::parseConfig(text, kovs::cni::Command::Add);
    } catch (const kovs::cni::CniError& e) {
        FAIL() << "kovs-cni rejects the conflist's entry: " << e.what() << " (code " << e.code() << ")";
    }
    EXPECT_TRUE(nc.mainMode());

    auto agentConf = kovs::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate());
    EXPECT_EQ(nc.bridge, agentConf.bridge.integration);
    EXPECT_EQ(nc.ovsdb, agentConf.ovsdbRemote());
    EXPECT_EQ(nc.agentSocket, agentConf.statusSocket) << "kovs-cni reports its commands where the agent listens";
    // Pods and gw0 share the MTU by following the node: the agent sizes gw0 to
    // the uplink's MTU less VXLAN, kovs-cni sizes pods to gw0.
    EXPECT_FALSE(nc.mtu) << "a fixed pod MTU would not follow a jumbo underlay";
    EXPECT_FALSE(nc.uplinkMtu) << "a fixed uplinkMTU would not follow a jumbo underlay";
    EXPECT_EQ(agentConf.uplink.mtu, 0) << "uplink.mtu must be left to the interface";
    EXPECT_EQ(agentConf.gateway.mtu, 0);
    EXPECT_EQ(nc.podMtu(8950), 8950);
}

TEST_F(KindFiles, InitScriptFillsInThePodCidrAndInstallsPluginThenConflist) {
    TempDir dir;
    auto r = nodeInit(dir, configMapData(configMap_), {{"KOVS_POD_CIDR", "10.244.3.0/24"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto rendered = Json::parse(readFile(dir.path() / "net.d/10-kovs.conflist"));
    EXPECT_EQ(rendered["plugins"][0]["ipam"]["ranges"][0][0]["subnet"], "10.244.3.0/24");
    EXPECT_EQ(rendered.dump().find("usePodCidr"), std::string::npos);
    // containerd execs the binary named after the plugin's type.
    auto plugin = dir.path() / "opt-cni-bin" / rendered["plugins"][0]["type"].get<std::string>();
    ASSERT_TRUE(fs::exists(plugin)) << plugin;
    EXPECT_NE(fs::status(plugin).permissions() & fs::perms::others_exec, fs::perms::none);
    // No temp files left next to what kubelet reads.
    for (const auto& e : fs::directory_iterator(dir.path() / "net.d")) {
        EXPECT_EQ(e.path().filename(), "10-kovs.conflist") << "left behind: " << e.path();
    }
}

// The service-account token goes to the API server, never onto a command
// line: /proc/PID/cmdline is readable by every user on the node (issue 15,
// item 5). A stand-in curl records its argv and the headers it was handed
// (-H @FILE or -H @- for stdin, as curl reads them) and answers with a Node.
TEST_F(KindFiles, InitScriptKeepsTheTokenOffCurlsCommandLine) {
    TempDir dir;
    const std::string token = "eyJhbGciOiJSUzI1NiJ9.secret-token-value";
    fs::create_directories(dir.path() / "sa");
    writeFile(dir.path() / "sa/token", token + "\n");
    writeFile(dir.path() / "sa/ca.crt", "not a real CA\n");
    fs::create_directories(dir.path() / "bin");
    writeFile(dir.path() / "bin/curl", R"(#!/bin/bash
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
    fs::permissions(dir.path() / "bin/curl", fs::perms::owner_all);
    std::string path = (dir.path() / "bin").string() + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
    auto r = nodeInit(dir, configMapData(configMap_),
                      {{"NODE_NAME", "kind-worker"}, {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                       {"KUBERNETES_SERVICE_PORT", "443"}, {"KOVS_SERVICE_ACCOUNT_DIR", (dir.path() / "sa").string()},
                       {"PATH", path}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto argv = readFile(dir.path() / "curl.argv");
    EXPECT_NE(argv.find("https://10.96.0.1:443/api/v1/nodes/kind-worker"), std::string::npos) << argv;
    EXPECT_EQ(argv.find(token), std::string::npos) << "the token is on curl's command line:\n" << argv;
    EXPECT_NE(readFile(dir.path() / "curl.headers").find("Authorization: Bearer " + token), std::string::npos)
        << "curl was not given the token as a header";
    EXPECT_NE(readFile(dir.path() / "etc-kovs/agent.yaml").find("podCIDR: 10.244.7.0/24"), std::string::npos);
}

TEST_F(KindFiles, InitScriptRejectsBadInputAndInstallsNothing) {
    struct Case {
        std::map<std::string, std::string> env;
        std::string message;
    };
    std::vector<Case> cases = {
        {{{"KOVS_POD_CIDR", "10.244.3.0"}}, "KOVS_POD_CIDR: expected a CIDR"},
        {{{"KOVS_POD_CIDR", "10.244.3.0/24; rm -rf /"}}, "KOVS_POD_CIDR: expected a CIDR"},
        {{}, "NODE_NAME is not set"},
        {{{"NODE_NAME", "kind-worker"}}, "KUBERNETES_SERVICE_HOST is not set"},
        {{{"KOVS_POD_CIDR", "10.244.3.0/24"}, {"KOVS_CNI_MODE", "main"}}, "KOVS_CNI_MODE: expected standalone or chained"},
    };
    for (const auto& c : cases) {
        TempDir dir;
        auto r = nodeInit(dir, configMapData(configMap_), c.env);
        EXPECT_NE(r.exitCode, 0);
        EXPECT_NE(r.err.find(c.message), std::string::npos) << "stderr: " << r.err;
        EXPECT_FALSE(fs::exists(dir.path() / "net.d/10-kovs.conflist"));
        EXPECT_FALSE(fs::exists(dir.path() / "opt-cni-bin/kovs"));
        EXPECT_FALSE(fs::exists(dir.path() / "etc-kovs/agent.yaml"));
    }
}

TEST_F(KindFiles, DaemonSetSelectorMatchesItsPodLabels) {
    auto selector = ds_["spec"]["selector"]["matchLabels"];
    auto labels = ds_["spec"]["template"]["metadata"]["labels"];
    ASSERT_TRUE(selector && selector.size() > 0);
    for (const auto& kv : selector) {
        auto key = kv.first.as<std::string>();
        ASSERT_TRUE(labels[key]) << "template has no label " << key;
        EXPECT_EQ(labels[key].as<std::string>(), kv.second.as<std::string>()) << key;
    }
}

TEST_F(KindFiles, EveryVolumeMountHasAVolumeAndEveryVolumeIsUsed) {
    std::set<std::string> volumes, used;
    for (const auto& v : podSpec_["volumes"]) volumes.insert(v["name"].as<std::string>());
    for (const auto& c : allContainers(podSpec_)) {
        for (const auto& m : c["volumeMounts"]) {
            auto name = m["name"].as<std::string>();
            used.insert(name);
            EXPECT_TRUE(volumes.count(name)) << c["name"] << " mounts " << name << ", which is no volume";
        }
    }
    for (const auto& v : volumes) EXPECT_TRUE(used.count(v)) << "volume " << v << " is mounted by no container";
}

TEST_F(KindFiles, ServiceAccountIsTheOneBoundToTheNodeReaderRole) {
    ASSERT_TRUE(docs_.count("ServiceAccount/kovs-agent"));
    auto sa = docs_["ServiceAccount/kovs-agent"];
    EXPECT_EQ(podSpec_["serviceAccountName"].as<std::string>(), sa["metadata"]["name"].as<std::string>());

    ASSERT_TRUE(docs_.count("ClusterRoleBinding/kovs-agent"));
    auto binding = docs_["ClusterRoleBinding/kovs-agent"];
    ASSERT_EQ(binding["subjects"].size(), 1u);
    EXPECT_EQ(binding["subjects"][0]["kind"].as<std::string>(), "ServiceAccount");
    EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(), sa["metadata"]["name"].as<std::string>());
    EXPECT_EQ(binding["subjects"][0]["namespace"].as<std::string>(), sa["metadata"]["namespace"].as<std::string>());
    auto roleName = binding["roleRef"]["name"].as<std::string>();
    EXPECT_EQ(binding["roleRef"]["kind"].as<std::string>(), "ClusterRole");

    ASSERT_TRUE(docs_.count("ClusterRole/" + roleName)) << "roleRef names a missing ClusterRole " << roleName;
    auto rules = docs_["ClusterRole/" + roleName]["rules"];
    ASSERT_EQ(rules.size(), 1u) << "nodes get/list/watch is all kovs needs";
    EXPECT_EQ(strings(rules[0]["apiGroups"]), std::vector<std::string>{""});
    EXPECT_EQ(strings(rules[0]["resources"]), std::vector<std::string>{"nodes"});
    EXPECT_EQ(strings(rules[0]["verbs"]), (std::vector<std::string>{"get", "list", "watch"}));
}

TEST_F(KindFiles, AgentRunsWithTheRenderedConfigAndItsNodeName) {
    EXPECT_TRUE(podSpec_["hostNetwork"].as<bool>());
    auto agent = containerNamed(podSpec_, "kovs-agent");
    EXPECT_EQ(strings(agent["command"]), (std::vector<std::string>{"kovs-agent", "--config", "/etc/kovs/agent.yaml"}));
    auto init = containerNamed(podSpec_, "install-cni");
    EXPECT_EQ(envValue(init, "KOVS_CNI_MODE"), "standalone");

    // The init container writes /etc/kovs/agent.yaml into the volume the agent reads it from.
    auto mountOf = [](const YAML::Node& c, const std::string& path) -> std::string {
        for (const auto& m : c["volumeMounts"]) {
            if (m["mountPath"].as<std::string>() == path) return m["name"].as<std::string>();
        }
        return "";
    };
    EXPECT_FALSE(mountOf(agent, "/etc/kovs").empty());
    EXPECT_EQ(mountOf(agent, "/etc/kovs"), mountOf(init, "/etc/kovs"));
    EXPECT_FALSE(mountOf(init, "/etc/kovs-template").empty());

    for (const auto& c : {agent, init}) {
        bool found = false;
        for (const auto& e : c["env"]) {
            if (e["name"].as<std::string>() != "NODE_NAME") continue;
            found = true;
            EXPECT_EQ(e["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(), "spec.nodeName");
        }
        EXPECT_TRUE(found) << c["name"] << " has no NODE_NAME";
    }

    // Where the agent's OVS sockets are is where kovs-cni looks on the node.
    auto conf = kovs::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate());
    auto ovsRunVolume = mountOf(agent, conf.ovs.rundir);
    ASSERT_FALSE(ovsRunVolume.empty()) << conf.ovs.rundir << " is not a volume";
    std::map<std::string, YAML::Node> volumes;
    for (const auto& v : podSpec_["volumes"]) volumes.emplace(v["name"].as<std::string>(), YAML::Node(v));
    ASSERT_TRUE(volumes[ovsRunVolume]["hostPath"]) << "kovs-cni runs on the node: the OVS run dir must be a hostPath";
    EXPECT_EQ("unix:" + volumes[ovsRunVolume]["hostPath"]["path"].as<std::string>() + "/db.sock",
              conflist()["plugins"][0]["ovsdb"].get<std::string>());
    auto tun = volumes[mountOf(containerNamed(podSpec_, "ovs"), "/dev/net/tun")];
    ASSERT_TRUE(tun["hostPath"]);
    EXPECT_EQ(tun["hostPath"]["path"].as<std::string>(), "/dev/net/tun");
    EXPECT_EQ(tun["hostPath"]["type"].as<std::string>(), "CharDevice");
    EXPECT_EQ(volumes[mountOf(init, "/host/opt/cni/bin")]["hostPath"]["path"].as<std::string>(), "/opt/cni/bin");
    EXPECT_EQ(volumes[mountOf(init, "/host/etc/cni/net.d")]["hostPath"]["path"].as<std::string>(), "/etc/cni/net.d");
}

TEST_F(KindFiles, ProbesPointAtMetricsAddress) {
    auto conf = kovs::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate());
    auto [host, port] = splitHostPort(conf.metricsAddress);
    auto agent = containerNamed(podSpec_, "kovs-agent");
    std::map<std::string, std::string> paths = {
        {"livenessProbe", "/healthz"}, {"readinessProbe", "/readyz"}, {"startupProbe", "/healthz"}};
    for (const auto& [probe, path] : paths) {
        auto get = agent[probe]["httpGet"];
        ASSERT_TRUE(get) << probe << " is not an httpGet probe";
        EXPECT_EQ(get["port"].as<int>(), port) << probe;
        EXPECT_EQ(get["host"].as<std::string>(), host) << probe;
        EXPECT_EQ(get["path"].as<std::string>(), path) << probe;
    }
}

// The six capabilities userspace OVS and the agent were verified to need
// (docs/kind.md), split by who needs them: the daemons in the ovs container,
// the agent's own in its container, none for the others.
TEST_F(KindFiles, CapabilitiesAreExactlyTheDocumentedOnesPerContainer) {
    std::map<std::string, std::vector<std::string>> want = {
        {"ovs", {"IPC_LOCK", "NET_ADMIN", "NET_RAW", "SYS_NICE"}},
        {"kovs-agent", {"NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE"}},
    };
    auto text = readFile(src_ / "kind/manifests/kovs.yaml");
    auto docs = readFile(src_ / "docs/kind.md");
    for (const auto& c : allContainers(podSpec_)) {
        auto name = c["name"].as<std::string>();
        auto caps = c["securityContext"]["capabilities"];
        EXPECT_EQ(strings(caps["drop"]), std::vector<std::string>{"ALL"}) << name;
        if (!want.count(name)) {
            EXPECT_FALSE(caps["add"]) << name << " needs no capability";
            continue;
        }
        auto added = strings(caps["add"]);
        std::sort(added.begin(), added.end());
        EXPECT_EQ(added, want[name]) << name;
        EXPECT_FALSE(c["securityContext"]["privileged"].as<bool>()) << name;
        // Each added capability carries a comment saying why (docs/kind.md lists them too).
        for (const auto& cap : added) {
            EXPECT_TRUE(std::regex_search(text, std::regex("# " + cap + ": "))) << cap << " has no '# " << cap << ": why' comment";
            EXPECT_NE(docs.find(cap), std::string::npos) << "docs/kind.md does not explain " << cap;
        }
    }
}

// The datapath's own container (docs/architecture.md, "Restarts, rollouts and
// reboots"): kovs-agent --ovs-daemons with the same rendered config, so it
// runs the daemons where the agent and kovs-cni look for them; no liveness or
// startup probe, so only the pod's end sends it SIGTERM (when it hands the
// node IP back); a process namespace shared with the agent.
TEST_F(KindFiles, OvsContainerRunsTheDaemonsTheAgentUses) {
    auto ovs = containerNamed(podSpec_, "ovs");
    auto agent = containerNamed(podSpec_, "kovs-agent");
    EXPECT_EQ(strings(ovs["command"]),
              (std::vector<std::string>{"kovs-agent", "--config", "/etc/kovs/agent.yaml", "--ovs-daemons"}));
    EXPECT_EQ(ovs["image"].as<std::string>(), agent["image"].as<std::string>());
    EXPECT_EQ(podSpec_["containers"][0]["name"].as<std::string>(), "ovs") << "kubelet starts containers in order: OVS first";
    for (const auto* probe : {"livenessProbe", "startupProbe"})
        EXPECT_FALSE(ovs[probe]) << probe << ": a failed probe would SIGTERM the ovs container and take the node IP off br-phy";
    EXPECT_TRUE(podSpec_["shareProcessNamespace"] && podSpec_["shareProcessNamespace"].as<bool>())
        << "the agent sizes vswitchd's sockets through its pid";
    auto conf = kovs::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate());
    auto mount = [](const YAML::Node& c, const std::string& path) -> std::string {
        for (const auto& m : c["volumeMounts"]) {
            if (m["mountPath"].as<std::string>() == path) return m["name"].as<std::string>();
        }
        return "";
    };
    EXPECT_EQ(mount(ovs, "/etc/kovs"), mount(agent, "/etc/kovs")) << "both read the rendered agent.yaml";
    EXPECT_FALSE(mount(ovs, conf.ovs.rundir).empty());
    EXPECT_EQ(mount(ovs, conf.ovs.rundir), mount(agent, conf.ovs.rundir)) << "one OVS run directory";
    auto dbDir = fs::path(conf.ovs.database).parent_path().string();
    EXPECT_FALSE(mount(ovs, dbDir).empty()) << conf.ovs.database << " must be on a volume: bridges outlive the pod";
    for (const auto& v : podSpec_["volumes"]) {
        if (v["name"].as<std::string>() == mount(ovs, dbDir)) {
            EXPECT_TRUE(v["hostPath"]) << "the OVS database must be on the node, not in the pod";
        }
    }
}

// Built for real only by the kind-node provider of the local cluster, on a
// builder without Docker Hub: a "# syntax=" directive makes BuildKit fetch
// the docker/dockerfile frontend image first, and nothing in the file needs
// more than the built-in frontend. The runtime stage copies from "build",
// which the KOVS_BINARIES argument points at the compile or the prebuilt stage.
TEST_F(KindFiles, DockerfileBuildsWithTheBuiltinFrontendFromEitherBinaryStage) {
    auto dockerfile = readFile(src_ / "kind/Dockerfile");
    EXPECT_FALSE(std::regex_search(dockerfile, std::regex("(^|\\n)#\\s*syntax\\s*=", std::regex::icase)))
        << "kind/Dockerfile has a syntax directive";
    EXPECT_NE(dockerfile.find("ARG KOVS_BINARIES=source\n"), std::string::npos);
    EXPECT_NE(dockerfile.find("FROM debian:${DEBIAN_TAG} AS source\n"), std::string::npos);
    EXPECT_NE(dockerfile.find("FROM debian:${DEBIAN_TAG} AS prebuilt\n"), std::string::npos);
    EXPECT_NE(dockerfile.find("FROM ${KOVS_BINARIES} AS build\n"), std::string::npos);
    auto runtime = dockerfile.substr(dockerfile.rfind("\nFROM "));
    EXPECT_EQ(runtime.rfind("\nFROM debian:${DEBIAN_TAG}-slim\n", 0), 0u) << "the last stage is not the runtime stage";
    EXPECT_NE(runtime.find("COPY --from=build /out/usr/local/bin/ /usr/local/bin/"), std::string::npos);
}

TEST_F(KindFiles, OneImageNameEverywhere) {
    std::set<std::string> images;
    for (const auto& c : allContainers(podSpec_)) images.insert(c["image"].as<std::string>());
    ASSERT_EQ(images.size(), 1u) << "containers use different images";
    auto image = *images.begin();

    std::smatch m;
    auto script = readFile(src_ / "kind/kovs-kind");
    ASSERT_TRUE(std::regex_search(script, m, std::regex("readonly default_image=(\\S+)")));
    EXPECT_EQ(m[1].str(), image) << "kind/kovs-kind builds and loads another image than the DaemonSet runs";
    auto dockerfile = readFile(src_ / "kind/Dockerfile");
    ASSERT_TRUE(std::regex_search(dockerfile, m, std::regex("docker build --file kind/Dockerfile --tag (\\S+) \\.")));
    EXPECT_EQ(m[1].str(), image) << "the Dockerfile documents another tag";

    // A :latest or untagged image would make kubelet try to pull what kind loaded.
    EXPECT_EQ(image.find(":latest"), std::string::npos);
    for (const auto& c : allContainers(podSpec_)) EXPECT_EQ(c["imagePullPolicy"].as<std::string>(), "IfNotPresent");
    // Every command the pod runs is a binary the image installs.
    for (const auto& c : allContainers(podSpec_)) {
        auto cmd = c["command"][0].as<std::string>();
        EXPECT_NE(dockerfile.find(cmd), std::string::npos) << c["name"] << " runs " << cmd << ", which kind/Dockerfile does not install";
    }
}

TEST_F(KindFiles, ClusterConfigLeavesThePodNetworkToKovs) {
    auto cluster = YAML::LoadFile((src_ / "kind/cluster.yaml").string());
    EXPECT_EQ(cluster["apiVersion"].as<std::string>(), "kind.x-k8s.io/v1alpha4");
    EXPECT_EQ(cluster["kind"].as<std::string>(), "Cluster");
    EXPECT_TRUE(cluster["networking"]["disableDefaultCNI"].as<bool>());
    EXPECT_EQ(cluster["networking"]["podSubnet"].as<std::string>(), "10.244.0.0/16");
    std::map<std::string, int> roles;
    for (const auto& n : cluster["nodes"]) roles[n["role"].as<std::string>()]++;
    EXPECT_EQ(roles, (std::map<std::string, int>{{"control-plane", 1}, {"worker", 2}}));
}

TEST_F(KindFiles, CiWorkflowRunsKovsKindAndCollectsDoctorFromTheAgents) {
    auto wf = YAML::LoadFile((src_ / "kind/github-actions-e2e.yml").string());
    ASSERT_TRUE(wf["jobs"] && wf["jobs"].size() == 1);
    auto steps = wf["jobs"].begin()->second["steps"];
    bool up = false, smoke = false, doctorOnFailure = false, down = false;
    auto labels = ds_["spec"]["template"]["metadata"]["labels"];
    auto selector = "app.kubernetes.io/name=" + labels["app.kubernetes.io/name"].as<std::string>();
    for (const auto& st : steps) {
        if (!st["run"]) continue;
        auto run = st["run"].as<std::string>();
        auto onFailure = st["if"] && st["if"].as<std::string>() == "failure()";
        up |= run.find("kind/kovs-kind up --name") != std::string::npos;
        smoke |= run.find("nodeName:") != std::string::npos && run.find("ping") != std::string::npos;
        down |= run.find("kind/kovs-kind down") != std::string::npos && st["if"].as<std::string>("") == "always()";
        if (onFailure && run.find("kovsctl doctor") != std::string::npos) {
            doctorOnFailure = true;
            // It finds the agent pods and container the DaemonSet really makes.
            EXPECT_NE(run.find("-n kovs-system"), std::string::npos);
            EXPECT_NE(run.find(selector), std::string::npos) << "pods are selected by another label than " << selector;
            EXPECT_NE(run.find("-c kovs-agent"), std::string::npos);
        }
    }
    EXPECT_TRUE(up) << "the workflow must run kind/kovs-kind up, as docs/kind.md does";
    EXPECT_TRUE(smoke) << "no cross-node smoke test (pods pinned with nodeName, ping between them)";
    EXPECT_TRUE(doctorOnFailure) << "no failure() step collecting kovsctl doctor";
    EXPECT_TRUE(down) << "the cluster must be deleted in an always() step";
}

class CompanionOverlay : public KindFiles {
protected:
    void SetUp() override {
        KindFiles::SetUp();
        auto dir = src_ / "kind/overlays/companion";
        auto kustomization = YAML::LoadFile((dir / "kustomization.yaml").string());
        EXPECT_EQ(strings(kustomization["resources"]), std::vector<std::string>{"../../manifests"});
        for (const auto& p : kustomization["patches"]) {
            for (auto& [key, doc] : loadDocuments(dir / p["path"].as<std::string>())) patches_[key] = doc;
        }
        ASSERT_TRUE(patches_.count("ConfigMap/kovs-config"));
        ASSERT_TRUE(patches_.count("DaemonSet/kovs-agent"));
        auto base = YAML::LoadFile((src_ / "kind/manifests/kustomization.yaml").string());
        EXPECT_EQ(strings(base["resources"]), std::vector<std::string>{"kovs.yaml"});
    }
    std::map<std::string, YAML::Node> patches_;
};

TEST_F(CompanionOverlay, AgentConfigIsCompanionOnAntreasGateway) {
    auto data = configMapData(patches_["ConfigMap/kovs-config"]);
    auto conf = kovs::parseConfig("node: {podCIDR: 10.244.1.0/24}\n" + data.at("agent.yaml"));
    EXPECT_EQ(conf.mode, Config::Mode::Companion);
    EXPECT_EQ(conf.bridge.gateway, "antrea-gw0");
    EXPECT_EQ(conf.uplink.mode, Config::UplinkMode::None);
    EXPECT_FALSE(conf.ovs.manage) << "Antrea runs the OVS daemons";
    EXPECT_EQ(conf.metricsAddress, kovs::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate()).metricsAddress)
        << "the base DaemonSet's probes must still point at it";
}

TEST_F(CompanionOverlay, ChainedEntryIsOneKovs_cniAcceptsAfterAntrea) {
    auto data = configMapData(patches_["ConfigMap/kovs-config"]);
    Json entry = Json::parse(data.at("chained-plugin.json"));
    EXPECT_EQ(entry.at("type"), "kovs");
    Json list = {{"cniVersion", "1.0.0"}, {"name", "antrea"}, {"plugins", Json::array()}};
    Json conf = pluginConfig(list, entry);
    conf["prevResult"] = {{"cniVersion", "1.0.0"},
                          {"interfaces", {{{"name", "eth0"}, {"sandbox", "/var/run/netns/cni-1"}}}},
                          {"ips", {{{"address", "10.244.1.5/24"}, {"interface", 0}}}}};
    kovs::cni::NetConf nc;
    try {
        nc = kovs::cni::CniRequestParser::parseConfig(conf.dump(), kovs::cni::Command::Add);
    } catch (const kovs::cni::CniError& e) {
        FAIL() << "kovs-cni rejects chained-plugin.json: " << e.what();
    }
    EXPECT_FALSE(nc.mainMode());
}

TEST_F(CompanionOverlay, InitScriptChainsKovsIntoAntreasConflistOnce) {
    auto data = configMapData(configMap_);
    for (const auto& [k, v] : configMapData(patches_["ConfigMap/kovs-config"])) data[k] = v;  // as kustomize merges
    TempDir dir;
    fs::create_directories(dir.path() / "net.d");
    Json antrea = {{"cniVersion", "0.3.0"},
                   {"name", "antrea"},
                   {"plugins", {{{"type", "antrea"}, {"ipam", {{"type", "host-local"}}}}, {{"type", "portmap"}}}}};
    writeFile(dir.path() / "net.d/10-antrea.conflist", antrea.dump(2));
    std::map<std::string, std::string> env = {
        {"KOVS_POD_CIDR", "10.244.1.0/24"}, {"KOVS_CNI_MODE", "chained"}, {"KOVS_CHAIN_CONFLIST", "10-antrea.conflist"}};
    for (int run = 0; run < 2; ++run) {
        auto r = nodeInit(dir, data, env);
        ASSERT_EQ(r.exitCode, 0) << "run " << run << ": " << r.err;
    }
    auto patched = Json::parse(readFile(dir.path() / "net.d/10-antrea.conflist"));
    ASSERT_EQ(patched["plugins"].size(), 3u) << patched.dump();
    EXPECT_EQ(patched["plugins"][0], antrea["plugins"][0]);
    EXPECT_EQ(patched["plugins"][1], antrea["plugins"][1]);
    EXPECT_EQ(patched["plugins"][2], Json::parse(data.at("chained-plugin.json")));
    EXPECT_FALSE(fs::exists(dir.path() / "net.d/10-kovs.conflist")) << "companion must not install a second network";
    EXPECT_TRUE(fs::exists(dir.path() / "opt-cni-bin" / patched["plugins"][2]["type"].get<std::string>()))
        << "the chained entry's type names the installed binary";
    auto conf = kovs::parseConfig(readFile(dir.path() / "etc-kovs/agent.yaml"));
    EXPECT_EQ(conf.node.podCIDR, "10.244.1.0/24");
    EXPECT_EQ(conf.mode, Config::Mode::Companion);
}

TEST_F(CompanionOverlay, InitScriptGivesUpClearlyWithoutTheOtherCni) {
    auto data = configMapData(configMap_);
    for (const auto& [k, v] : configMapData(patches_["ConfigMap/kovs-config"])) data[k] = v;
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
    auto data = configMapData(configMap_);
    for (const auto& [k, v] : configMapData(patches_["ConfigMap/kovs-config"])) data[k] = v;
    TempDir dir;
    fs::create_directories(dir.path() / "net.d");
    // What ovnkube-node writes (WriteCNIConfig), key order and all.
    const std::string ovnk = R"({"cniVersion":"0.4.0","name":"ovn-kubernetes","type":"ovn-k8s-cni-overlay","ipam":{},)"
                             R"("dns":{},"logFile":"/var/log/ovn-kubernetes/ovn-k8s-cni-overlay.log","logLevel":"4",)"
                             R"("logfile-maxsize":100,"logfile-maxbackups":5,"logfile-maxage":5})";
    writeFile(dir.path() / "net.d/10-ovn-kubernetes.conf", ovnk);
    std::map<std::string, std::string> env = {
        {"KOVS_POD_CIDR", "10.244.1.0/24"}, {"KOVS_CNI_MODE", "chained"}, {"KOVS_CHAIN_CONFLIST", "10-ovn-kubernetes.conf"}};
    for (int run = 0; run < 2; ++run) {
        auto r = nodeInit(dir, data, env);
        ASSERT_EQ(r.exitCode, 0) << "run " << run << ": " << r.err;
    }
    EXPECT_EQ(readFile(dir.path() / "net.d/10-ovn-kubernetes.conf"), ovnk) << "the other CNI's file is never changed";
    auto derived = dir.path() / "net.d/00-kovs-10-ovn-kubernetes.conflist";
    ASSERT_TRUE(fs::exists(derived));
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir.path() / "net.d")) files.push_back(e.path().filename().string());
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
    writeFile(dir.path() / "net.d/10-ovn-kubernetes.conf", changed.dump());
    ASSERT_EQ(nodeInit(dir, data, env).exitCode, 0);
    EXPECT_EQ(Json::parse(readFile(derived))["plugins"][0], changed);
    // And when it is gone, so is the chain (a node must not keep a network that left).
    fs::remove(dir.path() / "net.d/10-ovn-kubernetes.conf");
    env["KOVS_WAIT_SECONDS"] = "0";
    auto r = nodeInit(dir, data, env);
    EXPECT_NE(r.exitCode, 0);
    EXPECT_NE(r.err.find("10-ovn-kubernetes.conf never appeared"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(derived));
}

TEST_F(CompanionOverlay, InitScriptRefusesAConfItCannotChainAfter) {
    auto data = configMapData(configMap_);
    for (const auto& [k, v] : configMapData(patches_["ConfigMap/kovs-config"])) data[k] = v;
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
        fs::create_directories(dir.path() / "net.d");
        writeFile(dir.path() / "net.d" / bad.file, bad.text);
        auto r = nodeInit(dir, data, {{"KOVS_POD_CIDR", "10.244.1.0/24"}, {"KOVS_CNI_MODE", "chained"}, {"KOVS_CHAIN_CONFLIST", bad.file}});
        EXPECT_NE(r.exitCode, 0) << bad.text;
        EXPECT_NE(r.err.find(bad.error), std::string::npos) << bad.text << ": " << r.err;
        size_t left = 0;
        for (const auto& e : fs::directory_iterator(dir.path() / "net.d")) left += e.path().filename() != bad.file;
        EXPECT_EQ(left, 0u) << bad.text << ": a rejected config leaves nothing behind";
    }
}

// OVN-Kubernetes allocates node subnets itself: its Nodes may have no
// spec.podCIDR, and companion mode does not need one.
TEST_F(CompanionOverlay, InitScriptGoesOnWithoutAPodCidrInCompanionModeOnly) {
    auto data = configMapData(configMap_);
    for (const auto& [k, v] : configMapData(patches_["ConfigMap/kovs-config"])) data[k] = v;
    TempDir dir;
    fs::create_directories(dir.path() / "bin");
    fs::create_directories(dir.path() / "sa");
    writeFile(dir.path() / "sa/token", "t");
    writeFile(dir.path() / "sa/ca.crt", "c");
    // The API server's answer for a Node without spec.podCIDR.
    writeFile(dir.path() / "bin/curl", "#!/bin/sh\necho '{\"metadata\":{\"name\":\"n1\"},\"spec\":{}}'\n");
    fs::permissions(dir.path() / "bin/curl", fs::perms::owner_all);
    fs::create_directories(dir.path() / "net.d");
    writeFile(dir.path() / "net.d/10-antrea.conflist", R"({"cniVersion":"0.3.0","name":"antrea","plugins":[{"type":"antrea"}]})");
    std::map<std::string, std::string> env = {{"PATH", (dir.path() / "bin").string()}, {"NODE_NAME", "n1"},
                                              {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                              {"KOVS_SERVICE_ACCOUNT_DIR", (dir.path() / "sa").string()},
                                              {"KOVS_CNI_MODE", "chained"}, {"KOVS_WAIT_SECONDS", "0"}};
    auto r = nodeInit(dir, data, env);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto conf = kovs::parseConfig(readFile(dir.path() / "etc-kovs/agent.yaml"));
    EXPECT_EQ(conf.node.podCIDR, "");
    EXPECT_EQ(conf.mode, Config::Mode::Companion);
    env["KOVS_CNI_MODE"] = "standalone";
    auto standalone = nodeInit(dir, configMapData(configMap_), env);
    EXPECT_NE(standalone.exitCode, 0) << "standalone mode needs the podCIDR for its IPAM";
    EXPECT_NE(standalone.err.find("has no spec.podCIDR yet"), std::string::npos) << standalone.err;
}

TEST_F(CompanionOverlay, PatchedDaemonSetStillMountsOnlyExistingVolumes) {
    std::set<std::string> volumes;
    for (const auto& v : podSpec_["volumes"]) volumes.insert(v["name"].as<std::string>());
    auto patch = patches_["DaemonSet/kovs-agent"]["spec"]["template"]["spec"];
    for (const auto& v : patch["volumes"]) {
        EXPECT_TRUE(volumes.count(v["name"].as<std::string>())) << "the patch adds a volume " << v["name"];
    }
    for (const auto& c : allContainers(patch)) {
        if (c["$patch"]) continue;  // a container deleted from the base
        for (const auto& m : c["volumeMounts"]) {
            EXPECT_TRUE(volumes.count(m["name"].as<std::string>())) << c["name"] << " mounts unknown " << m["name"];
        }
        EXPECT_EQ(envValue(c, "KOVS_CNI_MODE"), "chained") << c["name"];
        if (c["image"]) {
            EXPECT_EQ(c["image"].as<std::string>(), containerNamed(podSpec_, "kovs-agent")["image"].as<std::string>());
        }
    }
}

// The merge itself is kustomize's; where kubectl is installed, check its output.
TEST_F(CompanionOverlay, KustomizeMergesTheOverlayAsIntended) {
    auto which = kovs::runProcess({"/bin/sh", "-c", "command -v kubectl"});
    if (!which.ok()) GTEST_SKIP() << "kubectl is not installed; the merge is checked where it is";
    auto r = kovs::runProcess({"kubectl", "kustomize", (src_ / "kind/overlays/companion").string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    std::map<std::string, YAML::Node> docs;
    for (const auto& doc : YAML::LoadAll(r.out)) {
        docs.emplace(doc["kind"].as<std::string>() + "/" + doc["metadata"]["name"].as<std::string>(), doc);
    }
    ASSERT_TRUE(docs.count("DaemonSet/kovs-agent") && docs.count("ConfigMap/kovs-config"));
    auto spec = docs["DaemonSet/kovs-agent"]["spec"]["template"]["spec"];
    auto init = containerNamed(spec, "install-cni");
    int modes = 0;
    for (const auto& e : init["env"]) modes += e["name"].as<std::string>() == "KOVS_CNI_MODE";
    EXPECT_EQ(modes, 1);
    EXPECT_EQ(envValue(init, "KOVS_CNI_MODE"), "chained");
    EXPECT_NO_THROW(containerNamed(spec, "kovs-agent"));
    EXPECT_NO_THROW(containerNamed(spec, "chain-cni"));
    EXPECT_THROW(containerNamed(spec, "ovs"), kovs::Error) << "Antrea's antrea-ovs runs the daemons";
    std::set<std::string> mounted;
    for (const auto& c : allContainers(spec)) {
        for (const auto& m : c["volumeMounts"]) mounted.insert(m["name"].as<std::string>());
    }
    for (const auto& v : spec["volumes"]) EXPECT_TRUE(mounted.count(v["name"].as<std::string>())) << "unused volume " << v["name"];
    for (const auto& v : spec["volumes"]) {
        if (v["name"].as<std::string>() == "ovs-run") {
            EXPECT_EQ(v["hostPath"]["path"].as<std::string>(), "/var/run/antrea/openvswitch");
        }
    }
    auto data = docs["ConfigMap/kovs-config"]["data"];
    auto conf = kovs::parseConfig("node: {podCIDR: 10.244.1.0/24}\n" + data["agent.yaml"].as<std::string>());
    EXPECT_EQ(conf.mode, Config::Mode::Companion);
    EXPECT_TRUE(data["chained-plugin.json"]);
}

// kovs-kind --dry-run runs with none of docker, kind or kubectl on PATH.
class KovsKindDryRun : public ::testing::Test {
protected:
    void SetUp() override {
        src_ = sourceDir();
        for (const char* tool : {"bash", "dirname", "basename", "uname", "sed", "awk", "cat", "grep", "wc", "tr", "sleep"}) {
            auto r = kovs::runProcess({"/bin/sh", "-c", std::string("command -v ") + tool});
            ASSERT_TRUE(r.ok()) << tool << " not found";
            auto target = r.out.substr(0, r.out.find('\n'));
            fs::create_symlink(target, bin_.path() / tool);
        }
    }
    kovs::ProcessResult run(std::vector<std::string> args) {
        args.insert(args.begin(), (src_ / "kind/kovs-kind").string());
        return runScript(args, {{"PATH", bin_.path().string()}, {"HOME", bin_.path().string()}});
    }
    // The lines of the output that are commands (indented under a step).
    static std::vector<std::string> commands(const std::string& out) {
        std::vector<std::string> lines;
        std::istringstream in(out);
        for (std::string l; std::getline(in, l);) {
            if (l.rfind("    ", 0) == 0 && l.find("(note:") == std::string::npos) lines.push_back(l.substr(4));
        }
        return lines;
    }
    fs::path src_;
    TempDir bin_;
};

TEST_F(KovsKindDryRun, UpPrintsEveryStepInOrder) {
    auto r = run({"up", "--dry-run"});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
    auto s = src_.string();
    std::vector<std::string> expected = {
        "docker build --file " + s + "/kind/Dockerfile --tag kovs:dev " + s,
        "kind create cluster --name kovs --config " + s + "/kind/cluster.yaml --wait 0s",
        "kind load docker-image kovs:dev --name kovs",
        "kubectl kustomize " + s + "/kind/manifests | sed 's|image: kovs:dev$|image: kovs:dev|' | kubectl --context kind-kovs apply -f -",
        "kubectl --context kind-kovs --namespace kovs-system rollout status daemonset/kovs-agent --timeout 300s",
        "kubectl --context kind-kovs get nodes   (every 3s, printing Ready/total, until all Ready)",
        "kubectl --context kind-kovs wait --for=condition=Ready nodes --all --timeout 60s",
    };
    auto got = commands(r.out);
    ASSERT_GE(got.size(), expected.size()) << r.out;
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "step command " << i;
    EXPECT_NE(r.out.find("kovsctl doctor"), std::string::npos) << "next steps should say how to diagnose";
    for (const char* tool : {"docker", "kind", "kubectl"}) {
        EXPECT_NE(r.out.find(std::string("(note: ") + tool + " is not on PATH"), std::string::npos) << r.out;
    }
    // Numbered steps, each announced before its command.
    EXPECT_NE(r.out.find("==> [1] check prerequisites"), std::string::npos);
    EXPECT_NE(r.out.find("==> [8] next steps"), std::string::npos) << r.out;
}

// One list of steps: what --list-steps prints (the kind-node provider of the
// local cluster runs exactly those) is what up announces, in order.
TEST_F(KovsKindDryRun, ListStepsIsWhatUpRuns) {
    auto dry = run({"up", "--dry-run", "--image", "reg.io/kovs:1"});
    ASSERT_EQ(dry.exitCode, 0) << dry.err;
    auto listed = run({"up", "--list-steps", "--image", "reg.io/kovs:1"});
    ASSERT_EQ(listed.exitCode, 0) << listed.err;
    std::vector<std::string> announced, titles;
    std::istringstream d(dry.out), l(listed.out);
    for (std::string line; std::getline(d, line);) {
        std::smatch m;
        if (std::regex_match(line, m, std::regex("==> \\[[0-9]+\\] (.*)"))) announced.push_back(m[1]);
    }
    for (std::string line; std::getline(l, line);) {
        auto tab = line.find('\t');
        ASSERT_NE(tab, std::string::npos) << "not id<TAB>title: " << line;
        EXPECT_TRUE(std::regex_match(line.substr(0, tab), std::regex("[a-z_]+"))) << line;
        titles.push_back(line.substr(tab + 1));
    }
    EXPECT_EQ(announced, titles);
    EXPECT_NE(listed.out.find("build the image reg.io/kovs:1 from kind/Dockerfile"), std::string::npos) << listed.out;
    auto down = run({"down", "--list-steps"});
    EXPECT_EQ(down.exitCode, 2);
    EXPECT_NE(down.err.find("only up has a list of steps"), std::string::npos) << down.err;
}

TEST_F(KovsKindDryRun, NameImageAndCompanionReachEveryStep) {
    auto r = run({"up", "--dry-run", "--name", "ci-1", "--image", "registry.local/kovs:pr-7", "--companion"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto out = r.out;
    EXPECT_NE(out.find("--tag registry.local/kovs:pr-7"), std::string::npos) << out;
    EXPECT_NE(out.find("kind create cluster --name ci-1"), std::string::npos);
    EXPECT_NE(out.find("kind load docker-image registry.local/kovs:pr-7 --name ci-1"), std::string::npos);
    EXPECT_NE(out.find("/kind/overlays/companion | sed 's|image: kovs:dev$|image: registry.local/kovs:pr-7|'"),
              std::string::npos) << out;
    EXPECT_NE(out.find("--context kind-ci-1"), std::string::npos);
    EXPECT_EQ(out.find("kind-kovs"), std::string::npos) << "the default context leaked: " << out;
}

TEST_F(KovsKindDryRun, DownAndLoad) {
    auto down = run({"down", "--dry-run", "--name", "ci-1"});
    ASSERT_EQ(down.exitCode, 0) << down.err;
    EXPECT_EQ(commands(down.out), std::vector<std::string>{"kind delete cluster --name ci-1"}) << down.out;
    auto load = run({"load", "--dry-run"});
    ASSERT_EQ(load.exitCode, 0) << load.err;
    auto cmds = commands(load.out);
    ASSERT_EQ(cmds.size(), 4u) << load.out;
    EXPECT_EQ(cmds[1], "kind load docker-image kovs:dev --name kovs");
    EXPECT_EQ(cmds[2], "kubectl --context kind-kovs --namespace kovs-system rollout restart daemonset/kovs-agent");
}

TEST_F(KovsKindDryRun, BadArgumentsAreRejectedWithUsageErrors) {
    struct Case {
        std::vector<std::string> args;
        std::string message;
    };
    std::vector<Case> cases = {
        {{"--dry-run"}, "missing command"},
        {{"up", "down"}, "more than one command"},
        {{"up", "--frobnicate"}, "unknown argument '--frobnicate'"},
        {{"up", "--name", "Bad_Name"}, "--name: expected"},
        {{"up", "--name"}, "--name needs a value"},
        {{"up", "--image", "kovs:dev; rm -rf ~"}, "--image: expected a docker image reference"},
        {{"up", "--image", "kovs|dev"}, "--image: expected"},
        {{"up", "--timeout", "soon"}, "--timeout: expected"},
    };
    for (const auto& c : cases) {
        auto r = run(c.args);
        EXPECT_EQ(r.exitCode, 2) << c.message;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << "stderr: " << r.err;
        EXPECT_TRUE(r.out.empty()) << "printed steps despite bad arguments: " << r.out;
    }
}

TEST_F(KovsKindDryRun, ForRealItNamesEachMissingToolWithAnInstallHint) {
    auto r = run({"up"});
    EXPECT_EQ(r.exitCode, 1);
    for (const char* tool : {"docker", "kind", "kubectl"}) {
        EXPECT_NE(r.err.find(std::string("kovs-kind: ") + tool + " is required but not on PATH: "), std::string::npos)
            << r.err;
    }
    EXPECT_EQ(r.out.find("docker build"), std::string::npos) << "went on without its tools: " << r.out;
}

// The real path, against stand-ins for docker, kind and kubectl that log their
// argv: the commands run are the ones --dry-run prints, in the same order.
class KovsKindWithFakeTools : public KovsKindDryRun {
protected:
    void SetUp() override {
        KovsKindDryRun::SetUp();
        log_ = bin_.path() / "calls.log";
        auto fake = [&](const std::string& name, const std::string& body) {
            writeFile(bin_.path() / name, "#!/bin/bash\nprintf '%s\\n' \"" + name + " $*\" >> " + log_.string() + "\n" + body);
            fs::permissions(bin_.path() / name, fs::perms::owner_all);
        };
        fake("docker", "exit 0\n");
        fake("kind", "[ \"$1 $2\" = 'get clusters' ] && printf '%s\\n' ${FAKE_CLUSTERS:-}\nexit 0\n");
        // get nodes: two polls with workers NotReady, then all Ready.
        fake("kubectl", "case \" $* \" in\n"
                        "  *' kustomize '*) exec cat \"${@: -1}/kovs.yaml\" ;;\n"
                        "  *' apply -f - '*) exec cat > " + (bin_.path() / "applied.yaml").string() + " ;;\n"
                        "  *' get nodes '*) n=$(cat " + (bin_.path() / "polls").string() + " 2>/dev/null || echo 0)\n"
                        "     echo $((n + 1)) > " + (bin_.path() / "polls").string() + "\n"
                        "     if [ $n -lt 2 ]; then printf 'kovs-control-plane True\\nkovs-worker False\\nkovs-worker2 <none>\\n'\n"
                        "     else printf 'kovs-control-plane True\\nkovs-worker True\\nkovs-worker2 True\\n'; fi ;;\n"
                        "esac\nexit 0\n");
    }
    std::vector<std::string> calls() const {
        std::vector<std::string> out;
        std::istringstream in(fs::exists(log_) ? readFile(log_) : "");
        for (std::string l; std::getline(in, l);) out.push_back(l);
        return out;
    }
    fs::path log_;
};

TEST_F(KovsKindWithFakeTools, UpRunsWhatTheDryRunPrintsAndReportsProgress) {
    auto dry = run({"up", "--dry-run", "--image", "reg.io/kovs:1"});
    ASSERT_EQ(dry.exitCode, 0) << dry.err;
    auto r = run({"up", "--image", "reg.io/kovs:1"});
    ASSERT_EQ(r.exitCode, 0) << r.out << r.err;

    // Each printed command was run, in order; the stages of one pipeline run
    // at once, so only the pipeline as a whole is ordered.
    std::vector<std::vector<std::string>> printed;
    // Up to the next steps, which are advice for the user, not steps.
    for (const auto& line : commands(dry.out.substr(0, dry.out.find("next steps")))) {
        if (line.find("(every 3s") != std::string::npos) {
            printed.push_back({line.substr(0, line.find("   ("))});
            continue;
        }
        // Pipe stages are separated by " | " (the sed expression has bare '|'s).
        printed.emplace_back();
        for (size_t from = 0;;) {
            auto bar = line.find(" | ", from);
            auto cmd = line.substr(from, bar == std::string::npos ? std::string::npos : bar - from);
            if (cmd.rfind("sed ", 0) != 0) printed.back().push_back(cmd);
            if (bar == std::string::npos) break;
            from = bar + 3;
        }
    }
    auto ran = calls();
    size_t start = 0;
    for (const auto& pipeline : printed) {
        size_t next = start;
        for (const auto& want : pipeline) {
            size_t at = start;
            while (at < ran.size() && ran[at].rfind(want, 0) != 0) ++at;
            EXPECT_LT(at, ran.size()) << "dry run printed '" << want << "', which the real run did not run (in that order)";
            if (at < ran.size()) next = std::max(next, at + 1);
        }
        start = next;
    }
    EXPECT_NE(std::find(ran.begin(), ran.end(), "docker info"), ran.end()) << "the daemon is not checked";

    auto applied = readFile(bin_.path() / "applied.yaml");
    EXPECT_EQ(applied.find("image: kovs:dev"), std::string::npos) << "--image did not reach every container";
    size_t n = 0;
    for (auto pos = applied.find("image: reg.io/kovs:1"); pos != std::string::npos; pos = applied.find("image: reg.io/kovs:1", pos + 1)) ++n;
    EXPECT_EQ(n, allContainers(YAML::LoadAll(applied).back()["spec"]["template"]["spec"]).size());

    EXPECT_NE(r.out.find("nodes Ready: 1/3 (waiting for kovs-worker kovs-worker2)\n    nodes Ready: 3/3\n"), std::string::npos)
        << r.out;
}

TEST_F(KovsKindWithFakeTools, UpReusesAnExistingCluster) {
    auto r = runScript({(src_ / "kind/kovs-kind").string(), "up"},
                       {{"PATH", bin_.path().string()}, {"HOME", bin_.path().string()}, {"FAKE_CLUSTERS", "other kovs"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("cluster kovs exists; reusing it"), std::string::npos) << r.out;
    for (const auto& c : calls()) EXPECT_EQ(c.find("kind create cluster"), std::string::npos) << c;
}

}  // namespace
