// kind/manifests/kovs.yaml's DaemonSet: labels, volumes, the agent and ovs
// containers, their probes and capabilities, held to the agent's config.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/Config.hpp"
#include "tests/unit/kind/KindTestSupport.hpp"

using namespace kovs::test::kind;

namespace {

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

TEST_F(KindFiles, AgentRunsWithTheRenderedConfigAndItsNodeName) {
    EXPECT_TRUE(podSpec_["hostNetwork"].as<bool>());
    auto agent = containerNamed(podSpec_, "kovs-agent");
    EXPECT_EQ(strings(agent["command"]), (std::vector<std::string>{"kovs-agent", "--config", "/etc/kovs/agent.yaml"}));
    auto init = containerNamed(podSpec_, "install-cni");
    EXPECT_EQ(envValue(init, "KOVS_CNI_MODE"), "standalone");

    // The init container writes /etc/kovs/agent.yaml into the volume the agent reads it from.
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
    auto conf = kovs::agent::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate());
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

// "127.0.0.1:9474" -> {"127.0.0.1", 9474}
std::pair<std::string, int> splitHostPort(const std::string& addr) {
    auto colon = addr.rfind(':');
    if (colon == std::string::npos) throw kovs::Error("metricsAddress " + addr + ": no port");
    return {addr.substr(0, colon), std::stoi(addr.substr(colon + 1))};
}

TEST_F(KindFiles, ProbesPointAtMetricsAddress) {
    auto conf = kovs::agent::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate());
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

// Least privilege beyond capabilities: the runtime's default seccomp profile
// for the whole pod (Kubernetes' default is Unconfined), the API token only
// in the containers that talk to the API server, and a memory limit only
// where an OOM kill costs no traffic (the agent; never the datapath's ovs
// container).
TEST_F(KindFiles, PodRunsUnderRuntimeDefaultSeccompWithTheTokenOnlyWhereUsed) {
    EXPECT_EQ(podSpec_["securityContext"]["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");
    EXPECT_FALSE(podSpec_["automountServiceAccountToken"].as<bool>());
    for (const auto& c : allContainers(podSpec_)) {
        EXPECT_FALSE(c["securityContext"]["seccompProfile"]) << c["name"] << " overrides the pod's seccomp profile";
    }
    const std::string saDir = "/var/run/secrets/kubernetes.io/serviceaccount";
    std::string tokenVolume;
    for (const auto& v : podSpec_["volumes"]) {
        if (!v["projected"]) continue;
        for (const auto& s : v["projected"]["sources"]) {
            if (s["serviceAccountToken"]) tokenVolume = v["name"].as<std::string>();
        }
    }
    ASSERT_FALSE(tokenVolume.empty()) << "no projected service account token volume";
    std::set<std::string> withToken;
    for (const auto& c : allContainers(podSpec_)) {
        for (const auto& m : c["volumeMounts"]) {
            if (m["name"].as<std::string>() != tokenVolume) continue;
            withToken.insert(c["name"].as<std::string>());
            EXPECT_EQ(m["mountPath"].as<std::string>(), saDir) << c["name"];
            EXPECT_TRUE(m["readOnly"].as<bool>()) << c["name"];
        }
    }
    EXPECT_EQ(withToken, (std::set<std::string>{"install-cni", "kovs-agent"}));
    auto agent = containerNamed(podSpec_, "kovs-agent");
    EXPECT_EQ(agent["resources"]["limits"]["memory"].as<std::string>(), "128Mi");
    auto ovs = containerNamed(podSpec_, "ovs");
    EXPECT_FALSE(ovs["resources"]["limits"]) << "an OOM kill of the ovs container takes the node's pod network down";
    EXPECT_TRUE(ovs["resources"]["requests"]["memory"]);
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
    auto conf = kovs::agent::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate());
    EXPECT_EQ(mountOf(ovs, "/etc/kovs"), mountOf(agent, "/etc/kovs")) << "both read the rendered agent.yaml";
    EXPECT_FALSE(mountOf(ovs, conf.ovs.rundir).empty());
    EXPECT_EQ(mountOf(ovs, conf.ovs.rundir), mountOf(agent, conf.ovs.rundir)) << "one OVS run directory";
    auto dbDir = fs::path(conf.ovs.database).parent_path().string();
    EXPECT_FALSE(mountOf(ovs, dbDir).empty()) << conf.ovs.database << " must be on a volume: bridges outlive the pod";
    for (const auto& v : podSpec_["volumes"]) {
        if (v["name"].as<std::string>() == mountOf(ovs, dbDir)) {
            EXPECT_TRUE(v["hostPath"]) << "the OVS database must be on the node, not in the pod";
        }
    }
}

}  // namespace
