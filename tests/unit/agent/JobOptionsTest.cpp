// Which config feeds which job, in each mode (issue 16): companion mode makes
// nothing on the other CNI's bridge, guards its gateway as it is, and runs the
// tunnel job on whichever bridge holds the node IP.
#include "agent/JobOptions.hpp"

#include <fnmatch.h>
#include <gtest/gtest.h>

#include "agent/NetworkdInterfaces.hpp"
#include "cni/VethPair.hpp"

using kovs::agent::Config;
using kovs::agent::parseConfig;

namespace {
Config resolved(const std::string& yaml) {
    auto c = parseConfig(yaml);
    if (!c.uplink.mtu) c.uplink.mtu = 1500;  // what resolveUplinkMtu reads from eth0
    return c;
}
}  // namespace

TEST(JobOptions, StandaloneOwnsItsGatewayWithMtuRequestAndTheFirstPodAddress) {
    auto c = resolved("node: {podCIDR: 10.244.1.0/24}\n");
    auto b = kovs::agent::bridgeOptions(c);
    EXPECT_EQ(b.gatewayPort, "gw0");
    EXPECT_EQ(b.gatewayMtu, 1450) << "set the OVS way, or vswitchd pulls gw0 down to the pods' MTU";
    EXPECT_EQ(b.tunnelPort, "tun0");
    EXPECT_TRUE(b.createIntegrationBridge);
    auto g = kovs::agent::gatewayOptions(c);
    EXPECT_EQ(g.mtu, 1450);
    ASSERT_EQ(g.addresses.size(), 1u);
    EXPECT_EQ(g.addresses[0].str(), "10.244.1.1/24");
    EXPECT_FALSE(g.adoptAddresses);
    EXPECT_TRUE(g.serviceSysctls);
}

TEST(JobOptions, CompanionMakesNoGatewayTunnelOrBridgeAndGuardsTheCnisGatewayAsItIs) {
    // The node's podCIDR is Antrea's convention, not OVN-K's or Kube-OVN's: not used for the gateway.
    auto c = resolved("node: {podCIDR: 10.244.1.0/24}\nmode: companion\nbridge: {gateway: ovn-k8s-mp0}\n");
    auto b = kovs::agent::bridgeOptions(c);
    EXPECT_EQ(b.gatewayPort, "") << "the other CNI's gateway is never created";
    EXPECT_EQ(b.tunnelPort, "") << "the other CNI tunnels";
    EXPECT_FALSE(b.createIntegrationBridge);
    EXPECT_EQ(b.gatewayMtu, std::nullopt);
    EXPECT_EQ(b.failMode, std::nullopt);
    EXPECT_EQ(b.physBridge, "br-phy") << "the uplink (shim by default) is still kovs's";
    auto g = kovs::agent::gatewayOptions(c);
    EXPECT_EQ(g.name, "ovn-k8s-mp0");
    EXPECT_EQ(g.mtu, std::nullopt) << "its MTU is the CNI's";
    EXPECT_TRUE(g.addresses.empty());
    EXPECT_TRUE(g.adoptAddresses) << "its addresses are read from the device";
    EXPECT_FALSE(g.serviceSysctls);
    EXPECT_TRUE(kovs::agent::tunnelJobWanted(c));
    EXPECT_EQ(kovs::agent::tunnelOptions(c).bridge, "br-phy");
}

TEST(JobOptions, CompanionDoesWhatIsAskedFor) {
    auto c = resolved("mode: companion\nbridge: {tunnel: tun0}\ngateway: {mtu: 1400, addresses: [10.244.1.2/24]}\n");
    EXPECT_EQ(kovs::agent::bridgeOptions(c).tunnelPort, "tun0");
    auto g = kovs::agent::gatewayOptions(c);
    EXPECT_EQ(g.mtu, 1400);
    ASSERT_EQ(g.addresses.size(), 1u);
    EXPECT_FALSE(g.adoptAddresses);
    EXPECT_EQ(kovs::agent::bridgeOptions(c).gatewayMtu, std::nullopt) << "a foreign Interface row is never written";
}

// OVN-Kubernetes' shared gateway: breth0 (theirs) holds the node IP.
TEST(JobOptions, UplinkNoneWithTheirPhysicalBridgeRunsTheTunnelJobThereAndTouchesItNot) {
    auto none = resolved("mode: companion\nuplink: {mode: none}\n");
    EXPECT_FALSE(kovs::agent::tunnelJobWanted(none)) << "no bridge holds the node IP for kovs to program";
    auto theirs = resolved("mode: companion\nuplink: {mode: none}\nbridge: {physical: breth0}\n");
    EXPECT_TRUE(kovs::agent::tunnelJobWanted(theirs));
    EXPECT_EQ(kovs::agent::tunnelOptions(theirs).bridge, "breth0");
    EXPECT_EQ(kovs::agent::bridgeOptions(theirs).physBridge, "") << "their bridge is not in kovs's desired state";
    for (const auto& d : kovs::agent::offloadHostDevices(theirs)) EXPECT_NE(d, "breth0");
}

// networkd must leave every link kovs configures alone; in standalone mode
// that includes the pods' host ends, whose names come from kovs-cni.
TEST(JobOptions, NetworkdDropinsCoverKovsLinksAndThePodsHostEndsInStandaloneOnly) {
    auto matches = [](const std::vector<kovs::gateway::NetworkdLink>& links, const std::string& name) {
        for (const auto& l : links)
            if (::fnmatch(l.match.c_str(), name.c_str(), 0) == 0) return true;
        return false;
    };
    auto standalone = kovs::agent::networkdDropinInterfaces(resolved("node: {podCIDR: 10.244.1.0/24}\n"));
    for (const char* n : {"gw0", "br-phy", "eth0", "kovs-up0", "kovs-up1"}) EXPECT_TRUE(matches(standalone, n)) << n;
    auto hostEnd = kovs::cni::VethPair::hostNameFor("0123456789abcdef", "eth0");
    EXPECT_TRUE(matches(standalone, hostEnd)) << hostEnd << ": kovs-cni's naming and the drop-in's pattern drifted apart";
    EXPECT_FALSE(matches(standalone, "br-int")) << "br-int carries nothing networkd could break";
    auto theirs = kovs::agent::networkdDropinInterfaces(
        resolved("node: {podCIDR: 10.244.1.0/24}\nmode: companion\nbridge: {gateway: antrea-gw0}\n"));
    EXPECT_FALSE(matches(theirs, hostEnd)) << "another CNI's pods are that CNI's";
    EXPECT_TRUE(matches(theirs, "antrea-gw0"));
}

// The gateway's routes, one function for the agent and doctor (issue 45, 5):
// the configured extra ones, and in standalone mode the peers' pod CIDRs of
// the families gw0 has an address of.
TEST(JobOptions, TheGatewaysRoutesAreTheExtraOnesAndThePeersPodCidrsOfItsFamilies) {
    using kovs::IpPrefix;
    kovs::peers::PeerSet peers{
        {"n2",
         {.name = "n2",
          .nodeIPs = {IpPrefix::parse("172.18.0.3/32")},
          .podCIDRs = {IpPrefix::parse("10.244.2.0/24"), IpPrefix::parse("fd00:10:244:2::/64")}}},
        {"n3", {.name = "n3", .nodeIPs = {IpPrefix::parse("172.18.0.4/32")}, .podCIDRs = {IpPrefix::parse("10.244.3.0/24")}}}};
    auto dsts = [](const std::vector<kovs::RouteInfo>& routes) {
        std::string out;
        for (const auto& r : routes) out += (out.empty() ? "" : " ") + r.dst.str();
        return out;
    };
    auto v4 = resolved("node: {podCIDR: 10.244.1.0/24}\ngateway: {extraRoutes: [10.96.0.0/12]}\n");
    EXPECT_EQ(dsts(kovs::agent::gatewayRoutes(v4)), "10.96.0.0/12") << "before the peers are known";
    EXPECT_EQ(dsts(kovs::agent::gatewayOptions(v4).routes), "10.96.0.0/12");
    EXPECT_EQ(dsts(kovs::agent::gatewayRoutes(v4, &peers)), "10.96.0.0/12 10.244.2.0/24 10.244.3.0/24")
        << "gw0 has no IPv6 address on an IPv4 node: no IPv6 route";
    auto dual = resolved("node: {podCIDRs: [10.244.1.0/24, 'fd00:10:244:1::/64']}\n");
    EXPECT_EQ(dsts(kovs::agent::gatewayRoutes(dual, &peers)), "10.244.2.0/24 fd00:10:244:2::/64 10.244.3.0/24");
    auto companion = resolved("mode: companion\ngateway: {extraRoutes: [10.96.0.0/12]}\n");
    EXPECT_EQ(dsts(kovs::agent::gatewayRoutes(companion, &peers)), "10.96.0.0/12") << "the other CNI routes its pods";
}
