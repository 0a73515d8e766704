// kind/overlays/companion: its ConfigMap against the agent's and kovs-cni's
// parsers, its DaemonSet patch against the base, and kustomize's merge.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "agent/Config.hpp"
#include "cni/CniError.hpp"
#include "cni/CniRequest.hpp"
#include "tests/unit/kind/KindTestSupport.hpp"

using namespace kovs::test::kind;

namespace {

TEST_F(CompanionOverlay, AgentConfigIsCompanionOnAntreasGateway) {
    auto data = configMapData(patches_["ConfigMap/kovs-config"]);
    auto conf = kovs::agent::parseConfig("node: {podCIDR: 10.244.1.0/24}\n" + data.at("agent.yaml"));
    EXPECT_EQ(conf.mode, Config::Mode::Companion);
    EXPECT_EQ(conf.bridge.gateway, "antrea-gw0");
    EXPECT_EQ(conf.uplink.mode, Config::UplinkMode::None);
    EXPECT_FALSE(conf.ovs.manage) << "Antrea runs the OVS daemons";
    EXPECT_EQ(conf.metricsAddress, kovs::agent::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate()).metricsAddress)
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
    auto conf = kovs::agent::parseConfig("node: {podCIDR: 10.244.1.0/24}\n" + data["agent.yaml"].as<std::string>());
    EXPECT_EQ(conf.mode, Config::Mode::Companion);
    EXPECT_TRUE(data["chained-plugin.json"]);
}

}  // namespace
