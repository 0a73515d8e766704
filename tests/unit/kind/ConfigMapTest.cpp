// kind/manifests/kovs.yaml's ConfigMap against the code's own parsers: the
// agent.yaml template (with the podCIDR kovs-node-init adds) against
// kovs::parseConfig, the conflist's entry against kovs-cni's.
#include <gtest/gtest.h>

#include <string>

#include "agent/Config.hpp"
#include "base/Error.hpp"
#include "cni/CniError.hpp"
#include "cni/CniRequest.hpp"
#include "tests/unit/kind/KindTestSupport.hpp"

using namespace kovs::test::kind;

namespace {

TEST_F(KindFiles, AgentConfigNeedsOnlyThePodCidrThatTheInitContainerAdds) {
    // One ConfigMap serves every node, so it cannot carry a podCIDR...
    try {
        kovs::agent::parseConfig(agentTemplate());
        FAIL() << "the agent.yaml template parsed without a podCIDR; then kovs-node-init's rendering is not needed";
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("node.podCIDR"), std::string::npos) << e.what();
    }
    // ...and with the node's podCIDR prepended, as kovs-node-init does, it parses.
    TempDir dir;
    auto r = nodeInit(dir, configMapData(configMap_), {{"KOVS_POD_CIDR", "10.244.2.0/24"}});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto rendered = readFile(dir / "etc-kovs/agent.yaml");
    Config c;
    ASSERT_NO_THROW(c = kovs::agent::parseConfig(rendered)) << rendered;
    EXPECT_EQ(kovs::joinPrefixes(c.node.podCIDRs), "10.244.2.0/24");
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

    auto agentConf = kovs::agent::parseConfig("node: {podCIDR: 10.244.0.0/24}\n" + agentTemplate());
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

}  // namespace
