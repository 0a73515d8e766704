#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/Config.hpp"
#include "base/Error.hpp"
#include "tests/support/TempDir.hpp"

using kovs::joinPrefixes;
using kovs::agent::Config;
using kovs::agent::parseConfig;

TEST(Config, DefaultsNeedOnlyThePodCidr) {
    auto c = parseConfig("node: {name: n1, podCIDR: 10.244.1.0/24}\n");
    EXPECT_EQ(c.node.name, "n1");
    EXPECT_EQ(c.bridge.integration, "br-int");
    EXPECT_EQ(c.bridge.gateway, "gw0");
    EXPECT_EQ(c.bridge.tunnelDstPort, 4789);
    EXPECT_EQ(c.uplink.mode, Config::UplinkMode::Shim);
    EXPECT_EQ(c.uplink.mtu, 0) << "the interface's own, resolved when the agent starts";
    EXPECT_EQ(c.ovsdbRemote(), "unix:/var/run/openvswitch/db.sock");
    EXPECT_EQ(c.gateway.resync, std::chrono::seconds(10));
    EXPECT_EQ(c.ovs.socketBufferKiB, 4096);
    EXPECT_TRUE(c.flows.conntrack) << "kube-proxy's Services need the reply path";
    EXPECT_TRUE(c.egress.masquerade);
    EXPECT_TRUE(c.egress.clusterCIDRs.empty()) << "every known pod CIDR";
    EXPECT_EQ(joinPrefixes(c.node.podCIDRs), "10.244.1.0/24") << "node.podCIDR, the old key, still works";
    EXPECT_EQ(joinPrefixes(c.cluster.serviceCIDRs), "10.96.0.0/16, fd00:10:96::/112") << "kind's defaults";
    EXPECT_EQ(c.tunnelOverhead(), 50);
    EXPECT_EQ(parseConfig("node: {podCIDR: 10.0.0.0/24}\novs: {socketBufferKiB: 0}\n").ovs.socketBufferKiB, 0)
        << "0 leaves OVS's default";
}

// ovs.db and ovs.dbPath were renamed (they read as one thing): the old
// names still work.
TEST(Config, NetworkPolicyIsEnforcedWhereThePodsComeFromTheApi) {
    EXPECT_FALSE(parseConfig("node: {podCIDR: 10.0.0.0/24}\n").enforcesPolicy()) << "no API: nothing to enforce";
    EXPECT_FALSE(parseConfig("node: {podCIDR: 10.0.0.0/24}\npeers: {source: file}\n").enforcesPolicy());
    EXPECT_TRUE(parseConfig("node: {podCIDR: 10.0.0.0/24}\npeers: {source: kubernetes}\n").enforcesPolicy());
    EXPECT_FALSE(parseConfig("node: {podCIDR: 10.0.0.0/24}\npeers: {source: kubernetes}\nnetworkPolicy: {enforce: false}\n").enforcesPolicy());
    EXPECT_FALSE(parseConfig("mode: companion\npeers: {source: kubernetes}\n").enforcesPolicy()) << "the other CNI's";
}

TEST(Config, TheOldOvsKeyNamesStillWork) {
    auto c = parseConfig("node: {podCIDR: 10.0.0.0/24}\novs: {db: 'tcp:127.0.0.1:6640', dbPath: /var/lib/ovs/conf.db}\n");
    EXPECT_EQ(c.ovsdbRemote(), "tcp:127.0.0.1:6640");
    EXPECT_EQ(c.ovs.database, "/var/lib/ovs/conf.db");
    c = parseConfig("node: {podCIDR: 10.0.0.0/24}\novs: {remote: 'tcp:127.0.0.1:6640', database: /var/lib/ovs/conf.db}\n");
    EXPECT_EQ(c.ovsdbRemote(), "tcp:127.0.0.1:6640");
    EXPECT_EQ(c.ovs.database, "/var/lib/ovs/conf.db");
}

TEST(Config, FullFileIsRead) {
    auto c = parseConfig(R"(
node: {name: kind-worker, podCIDR: 10.244.2.0/24}
ovs: {manage: true, rundir: /tmp/ovs}
bridge: {gateway: antrea-gw0, tunnel: vxlan0, tunnelDstPort: 8472}
mode: companion
gateway:
  mtu: 1400
  addresses: [10.244.2.1/24, fd00:10:244:2::1/64]
  extraRoutes: [10.96.0.0/12]
  resync: 500ms
uplink: {mode: direct, interface: eth1, portType: afxdp, mtu: 9000}
peers: {source: file, file: /tmp/peers.yaml}
flows: {conntrack: false, ofctlTimeout: 3s}
egress: {masquerade: true, clusterCIDR: 10.244.0.0/16, nonMasqueradeCIDRs: [192.168.0.0/16]}
resync: 2m
)");
    EXPECT_FALSE(c.flows.conntrack);
    EXPECT_EQ(c.flows.ofctlTimeout, std::chrono::seconds(3));
    EXPECT_EQ(joinPrefixes(c.egress.clusterCIDRs), "10.244.0.0/16");
    EXPECT_EQ(joinPrefixes(c.egress.nonMasqueradeCIDRs), "192.168.0.0/16");
    EXPECT_TRUE(c.ovs.manage);
    EXPECT_EQ(c.ovsdbRemote(), "unix:/tmp/ovs/db.sock");
    EXPECT_EQ(c.bridge.gateway, "antrea-gw0");
    EXPECT_EQ(c.bridge.tunnelDstPort, 8472);
    EXPECT_EQ(c.mode, Config::Mode::Companion);
    EXPECT_EQ(joinPrefixes(c.gateway.addresses), "10.244.2.1/24, fd00:10:244:2::1/64") << "host bits kept";
    EXPECT_EQ(joinPrefixes(c.gateway.extraRoutes), "10.96.0.0/12");
    EXPECT_EQ(c.gateway.resync, std::chrono::milliseconds(500));
    EXPECT_EQ(c.uplink.mode, Config::UplinkMode::Direct);
    EXPECT_EQ(c.uplink.portType, "afxdp");
    EXPECT_EQ(c.peers.source, Config::PeerSourceKind::File);
    EXPECT_EQ(c.resync, std::chrono::minutes(2));
}

struct BadConfig {
    const char* yaml;
    const char* expected;  // substring of the error
};

class ConfigRejects : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ConfigRejects, WithAnErrorNamingTheKey) {
    const auto& p = GetParam();
    try {
        parseConfig(p.yaml);
        FAIL() << "accepted: " << p.yaml;
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find(p.expected), std::string::npos) << "error was: " << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(
    BadKeysAndValues, ConfigRejects,
    ::testing::Values(
        BadConfig{"node: {podCIDR: 10.244.1.0/24}\nbridge: {integrtion: br-int}\n", "bridge.integrtion: unknown key"},
        BadConfig{"nodes: {}\n", "nodes: unknown key"},
        BadConfig{"node: {podCIDR: 10.244.1.0}\n", "node.podCIDR: expected an address with prefix length"},
        BadConfig{"node: {podCIDR: 10.244.1.0/33}\n", "node.podCIDR"},
        BadConfig{"node: {podCIDR: banana/24}\n", "node.podCIDR"},
        BadConfig{"node: {name: n}\n", "node.podCIDRs: required in standalone mode"},
        BadConfig{"node: {podCIDRs: 10.244.1.0/24}\n", "node.podCIDRs: expected a list"},
        BadConfig{"node: {podCIDRs: [10.244.1.0/24, 10.244.2.0/24]}\n", "node.podCIDRs: two pod CIDRs of one family"},
        BadConfig{"node: {podCIDRs: [10.244.1.0/31]}\n", "node.podCIDRs: 10.244.1.0/31 leaves no room for a gateway"},
        BadConfig{"node: {podCIDR: 10.244.1.0/24, podCIDRs: [10.244.1.0/24]}\n", "node.podCIDR: is the old name of node.podCIDRs"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\ncluster: {serviceCIDRs: [10.96.0.0]}\n", "cluster.serviceCIDRs[0]: expected an address"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\ncluster: {serviceCidrs: []}\n", "cluster.serviceCidrs: unknown key"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nbridge: {tunnelDstPort: 70000}\n", "bridge.tunnelDstPort: expected an integer 1-65535, got '70000'"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nbridge: {tunnelDstPort: x}\n", "bridge.tunnelDstPort"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nbridge: {gateway: a-very-long-gateway0}\n", "bridge.gateway: not a valid interface name"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nbridge: {gateway: ''}\n", "bridge.gateway: must not be empty"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nmode: hybrid\n", "mode: expected one of companion, standalone, got 'hybrid'"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nnetworkPolicy: {enforce: true}\n", "networkPolicy.enforce: needs peers.source: kubernetes"},
        BadConfig{"mode: companion\npeers: {source: kubernetes}\nnetworkPolicy: {enforce: true}\n",
                  "networkPolicy.enforce: companion mode never installs policy"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nnetworkPolicy: {enfore: false}\n", "networkPolicy.enfore: unknown key"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\novs: {manage: maybe}\n", "ovs.manage: expected true or false"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\novs: {db: /var/run/db.sock}\n", "ovs.db: expected unix:/path or tcp:host:port"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\novs: {remote: /var/run/db.sock}\n", "ovs.remote: expected unix:/path or tcp:host:port"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\novs: {remote: unix:/a, db: unix:/b}\n", "ovs.db: is the old name of ovs.remote"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\novs: {socketBufferKiB: 100}\n", "ovs.socketBufferKiB: expected 0 (OVS's default) or 256-262144, got '100'"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\novs: {socketBufferKiB: 4MiB}\n", "ovs.socketBufferKiB: expected an integer"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\ngateway: {resync: soon}\n", "gateway.resync: expected a duration"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\ngateway: {resync: -1s}\n", "gateway.resync"},
        // stod reads these; NaN passed every range check and was then cast to an integer (UB).
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\ngateway: {resync: nan}\n", "gateway.resync: expected a duration"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nresync: NaNms\n", "resync: expected a duration"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nflows: {ofctlTimeout: inf}\n", "flows.ofctlTimeout: expected a duration"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nresync: 1e400\n", "resync: expected a duration"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\ngateway: {addresses: 10.0.0.1/24}\n", "gateway.addresses: expected a list"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\ngateway: {addresses: [10.0.0.1]}\n", "gateway.addresses[0]: expected an address"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\ngateway: {addresses: [10.0.0.1/32]}\n",
                  "gateway.addresses: 10.0.0.1/32: in standalone mode its network is the pod CIDR"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\ngateway: {mtu: 1500}\nuplink: {mtu: 1500}\n", "gateway.mtu: 1500 leaves no room for the 50-byte VXLAN header"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nuplink: {portType: tap}\n", "uplink.portType: expected one of afxdp, afxdp-nonpmd, dpdk, system"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nuplink: {mode: bridge}\n", "uplink.mode"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\npeers: {source: etcd}\n", "peers.source"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\negress: {clusterCIDR: 10.244.0.0}\n", "egress.clusterCIDR: expected an address with prefix length"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\negress: {clusterCIDRs: [10.244.0.0]}\n", "egress.clusterCIDRs[0]: expected an address"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\negress: {nonMasqueradeCIDRs: [x]}\n", "egress.nonMasqueradeCIDRs[0]"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\negress: {masq: true}\n", "egress.masq: unknown key"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24}\nflows: {conntrack: sometimes}\n", "flows.conntrack: expected true or false"},
        BadConfig{"node: [1, 2]\n", "node: expected a mapping"},
        BadConfig{"node: {podCIDR: [1]}\n", "node.podCIDR: expected a value, got a list"},
        BadConfig{"node: {podCIDR: 10.0.0.0/24\n", "config: invalid YAML at line"}));

// The keys that hold prefixes are typed once, at load: a dual-stack node,
// its Service CIDRs and the tunnel's overhead on the underlay of its family.
TEST(Config, DualStackAndIPv6NodesAndTheirTunnelOverhead) {
    auto dual = parseConfig(
        "node: {podCIDRs: [10.244.1.0/24, 'fd00:10:244:1::/64']}\n"
        "cluster: {serviceCIDRs: [10.96.0.0/12, 'fd00:10:96::/108']}\negress: {clusterCIDRs: [10.244.0.0/16, 'fd00:10:244::/56']}\n");
    EXPECT_EQ(joinPrefixes(dual.node.podCIDRs), "10.244.1.0/24, fd00:10:244:1::/64") << "the Node's order";
    EXPECT_EQ(joinPrefixes(dual.cluster.serviceCIDRs), "10.96.0.0/12, fd00:10:96::/108");
    EXPECT_EQ(joinPrefixes(dual.egress.clusterCIDRs), "10.244.0.0/16, fd00:10:244::/56");
    EXPECT_EQ(dual.underlayFamily(), AF_INET) << "kind's dual-stack nodes tunnel over IPv4";
    EXPECT_EQ(dual.tunnelOverhead(), 50);

    auto v6 = parseConfig("node: {podCIDRs: ['fd00:10:244:1::/64']}\nuplink: {mtu: 1500}\n");
    EXPECT_EQ(v6.underlayFamily(), AF_INET6);
    EXPECT_EQ(v6.tunnelOverhead(), 70) << "outer IPv6 40 + UDP 8 + VXLAN 8 + inner Ethernet 14";
    EXPECT_EQ(v6.gatewayMtu(), 1430);

    // Host bits of a pod CIDR are cleared: the CIDR is a network.
    EXPECT_EQ(joinPrefixes(parseConfig("node: {podCIDRs: [10.244.1.7/24]}\n").node.podCIDRs), "10.244.1.0/24");
}

// uplink.mtu unset follows the interface, so gw0 (and the pods, which follow
// gw0) use a jumbo underlay; a gateway.mtu that does not fit is caught then.
TEST(Config, UplinkMtuFollowsTheInterface) {
    kovs::test::TempDir tmp{"kovs-sysnet"};
    const std::string& dir = tmp.path();
    std::filesystem::create_directories(std::string(dir) + "/eth0");
    std::ofstream(std::string(dir) + "/eth0/mtu") << "9000\n";

    auto c = parseConfig("node: {podCIDR: 10.244.1.0/24}\n");
    kovs::agent::resolveUplinkMtu(c, dir);
    EXPECT_EQ(c.uplink.mtu, 9000);
    EXPECT_EQ(c.gatewayMtu(), 8950);

    auto fixed = parseConfig("node: {podCIDR: 10.244.1.0/24}\nuplink: {mtu: 1500}\n");
    kovs::agent::resolveUplinkMtu(fixed, dir);
    EXPECT_EQ(fixed.gatewayMtu(), 1450) << "a configured uplink.mtu wins";

    auto missing = parseConfig("node: {podCIDR: 10.244.1.0/24}\nuplink: {interface: eth9}\n");
    kovs::agent::resolveUplinkMtu(missing, dir);
    EXPECT_EQ(missing.uplink.mtu, 1500) << "no such interface: the Ethernet default";

    auto tooBig = parseConfig("node: {podCIDR: 10.244.1.0/24}\ngateway: {mtu: 8960}\n");
    try {
        kovs::agent::resolveUplinkMtu(tooBig, dir);
        FAIL() << "gateway.mtu 8960 accepted on a 9000-byte uplink";
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("gateway.mtu: 8960 leaves no room"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(dir);
}

// A narrower path to a peer (a route with an mtu, issue 45) sizes gw0 and
// the pods where uplink.mtu is the device's; a value set by hand, for the
// uplink or the gateway, is kept as it is (doctor names the narrower path).
TEST(Config, TheNarrowestPathToAPeerSizesTheGatewayUnlessAnMtuIsSetByHand) {
    auto c = parseConfig("node: {podCIDR: 10.244.1.0/24}\n");
    c.uplink.mtu = 1500;  // resolved from eth0
    EXPECT_EQ(c.gatewayMtu(), 1450);
    EXPECT_EQ(c.gatewayMtu(0), 1450) << "no path MTU known";
    EXPECT_EQ(c.gatewayMtu(1400), 1350);
    EXPECT_EQ(c.gatewayMtu(1500), 1450) << "as wide as the uplink";
    EXPECT_EQ(c.gatewayMtu(9000), 1450) << "a wider path never widens gw0 past the uplink";
    EXPECT_EQ(c.gatewayMtu(600), 576) << "never below the floor the config check keeps";

    auto v6 = parseConfig("node: {podCIDRs: ['fd00:10:244:1::/64']}\n");
    v6.uplink.mtu = 1500;
    EXPECT_EQ(v6.gatewayMtu(1400), 1330) << "70 bytes of VXLAN over IPv6";

    auto uplinkByHand = parseConfig("node: {podCIDR: 10.244.1.0/24}\nuplink: {mtu: 1500}\n");
    EXPECT_TRUE(uplinkByHand.uplink.mtuConfigured);
    EXPECT_EQ(uplinkByHand.gatewayMtu(1400), 1450);
    auto gatewayByHand = parseConfig("node: {podCIDR: 10.244.1.0/24}\ngateway: {mtu: 1400}\n");
    gatewayByHand.uplink.mtu = 1500;
    EXPECT_EQ(gatewayByHand.gatewayMtu(1300), 1400);
    auto companion = parseConfig("mode: companion\n");
    companion.uplink.mtu = 1500;
    EXPECT_EQ(companion.gatewayMtu(1400), 0) << "the other CNI's device keeps its MTU";
}

TEST(Config, MissingFileNamesThePath) {
    try {
        kovs::agent::loadConfig("/nonexistent/kovs.yaml");
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/kovs.yaml"), std::string::npos) << e.what();
    }
}
