// kovs-agent in companion mode next to OVN-shaped OVS state, the real binary
// (KOVS_AGENT) against a real OVS (issue 16, defects 3, 4 and 8):
//   - no tunnel port, no gateway and no integration bridge of kovs's;
//   - the other CNI's gateway is guarded once it exists, never created,
//     even when the agent starts before that CNI;
//   - uplink.mode none + bridge.physical naming the CNI's bridge that holds
//     the node IP (OVN-Kubernetes' shared-gateway breth0): the tunnel job
//     programs each peer's route and neighbour there;
//   - the CNI's OVSDB rows are the same before the agent, while it runs and
//     after `kovs-agent --cleanup`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/Process.hpp"
#include "tests/support/AgentProcess.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"

using namespace kovs;
using namespace kovs::test;
using namespace std::chrono_literals;

namespace {

class CompanionAgentTest : public ::testing::Test {
protected:
    void SetUp() override { std::filesystem::create_directories(dir()); }
    void TearDown() override {
        for (const auto* l : {"breth0", "ovn-k8s-mp0"}) runProcess({"ip", "link", "del", l});
    }
    std::string dir() const { return ovs.dir() + "/agent"; }

    static constexpr const char* kPeersV4 = "- {name: node1, nodeIP: 172.31.0.2}\n- {name: node2, nodeIP: 172.31.0.3}\n";
    void writeConfig(const std::string& extraBridgeKeys, const std::string& peers = kPeersV4) {
        std::ofstream(dir() + "/peers.yaml") << peers;
        std::ofstream(dir() + "/agent.yaml")
            << "node: {name: node1}\nmode: companion\n"
            << "ovs: {manage: false, rundir: " << ovs.dir() << ", remote: " << ovs.dbRemote() << "}\n"
            << "bridge: {integration: br-int, gateway: ovn-k8s-mp0" << extraBridgeKeys << "}\n"
            << "gateway: {networkdDropinDir: " << dir() << "/networkd}\n"
            << "uplink: {mode: none}\n"
            << "peers: {source: file, file: " << dir() << "/peers.yaml}\n"
            << "statusSocket: " << dir() << "/agent.sock\n";
    }

    // What ovn-controller and ovnkube-node make: br-int with a Geneve tunnel
    // and the management port (.2 of the node subnet, MTU 1400 by mtu_request).
    void ovnCreatesItsBridge() {
        ovs.vsctl({"add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev", "fail_mode=secure",
                   "external_ids:ovn-nb-cfg=3", "--", "add-port", "br-int", "ovn-node2-0", "--", "set", "Interface",
                   "ovn-node2-0", "type=geneve", "options:remote_ip=172.31.0.3", "options:key=flow", "options:csum=true",
                   "external_ids:ovn-chassis-id=node2@172.31.0.3", "--", "add-port", "br-int", "ovn-k8s-mp0", "--", "set",
                   "Interface", "ovn-k8s-mp0", "type=internal", "mtu_request=1400", "external_ids:iface-id=k8s-node1"});
        ASSERT_TRUE(pollUntil([] { return runProcess({"ip", "link", "show", "ovn-k8s-mp0"}).ok(); }, 10s));
        runChecked({"ip", "addr", "add", "10.244.1.2/24", "dev", "ovn-k8s-mp0"});
        runChecked({"ip", "link", "set", "ovn-k8s-mp0", "up"});
    }
    // OVN-Kubernetes' shared gateway: breth0 holds the node IP.
    void ovnkCreatesBreth0() {
        ovs.vsctl({"add-br", "breth0", "--", "set", "Bridge", "breth0", "datapath_type=netdev",
                   "external_ids:bridge-id=breth0", "other_config:hwaddr=02:42:ac:1f:00:02"});
        ASSERT_TRUE(pollUntil([] { return runProcess({"ip", "link", "show", "breth0"}).ok(); }, 10s));
        runChecked({"ip", "addr", "add", "172.31.0.2/24", "dev", "breth0"});
        runChecked({"ip", "link", "set", "breth0", "up"});
        // The peer's MAC, as ARP would have learned it.
        runChecked({"ip", "neigh", "replace", "172.31.0.3", "lladdr", "02:42:ac:1f:00:03", "dev", "breth0", "nud", "permanent"});
    }
    // The configuration columns of every row (no statistics or status).
    std::string rows() const {
        std::string out;
        for (const auto& [table, cols] : std::vector<std::pair<std::string, std::string>>{
                 {"Open_vSwitch", "bridges,external_ids,other_config"},
                 {"Bridge", "name,datapath_type,fail_mode,ports,external_ids,other_config,protocols"},
                 {"Port", "name,interfaces,external_ids,other_config,tag"},
                 {"Interface", "name,type,options,external_ids,other_config,mtu_request"}}) {
            out += ovs.vsctl({"--columns=" + cols, "list", table});
        }
        return out;
    }
    std::string linkState(const std::string& dev) const { return runChecked({"ip", "-d", "addr", "show", "dev", dev}); }

    OvsSandbox ovs;
};

}  // namespace

TEST_F(CompanionAgentTest, NothingOfTheirsIsTouchedAndTunnelEntriesGoOnTheirBridge) {
    ovnCreatesItsBridge();
    ovnkCreatesBreth0();
    writeConfig(", physical: breth0");
    auto before = rows();
    auto mpBefore = linkState("ovn-k8s-mp0");
    {
        AgentProcess agent(dir() + "/agent.yaml", dir() + "/agent.sock", dir() + "/agent.log");
        ASSERT_EQ(agent.waitReady(), "");
        auto routes = ovs.appctl({"ovs/route/show"});
        EXPECT_NE(routes.find("172.31.0.3/32 dev breth0"), std::string::npos) << routes;
        auto neigh = ovs.appctl({"tnl/neigh/show"});
        EXPECT_NE(neigh.find("172.31.0.3"), std::string::npos) << neigh;
        EXPECT_NE(neigh.find("02:42:ac:1f:00:03"), std::string::npos) << neigh;
        EXPECT_EQ(rows(), before) << "kovs changed OVSDB rows of the other CNI (or added its own)\n" << agent.log();
        EXPECT_EQ(linkState("ovn-k8s-mp0"), mpBefore) << "the management port's MTU and addresses are OVN-K's";
        auto status = unixJsonRequest(dir() + "/agent.sock", {{"command", "status"}}, 2000);
        EXPECT_EQ(status["gateway"]["addresses"], nlohmann::json::array({"10.244.1.2/24"})) << status["gateway"].dump();
        EXPECT_TRUE(status["gateway"]["mtu"].is_null());
        agent.stop();
    }
    auto cleanup = runProcess({agentBinary(), "--config", dir() + "/agent.yaml", "--cleanup"});
    EXPECT_TRUE(cleanup.ok()) << cleanup.err;
    EXPECT_EQ(rows(), before) << "--cleanup changed the other CNI's rows";
}

// Companion mode is family-agnostic (issue 24): on a dual-stack OVN-K node
// whose Geneve underlay is IPv6 (kind's ipFamily ipv6), the tunnel entries
// for the IPv6 peer go on breth0, the management port's IPv6 address is
// guarded like its IPv4 one, and nothing of OVN's is touched.
TEST_F(CompanionAgentTest, OnAnIpv6UnderlayTheTunnelEntriesAndTheGatewayGuardCoverIpv6) {
    ovnCreatesItsBridge();
    ovnkCreatesBreth0();
    runChecked({"ip", "addr", "add", "fd00:10:244:1::2/64", "dev", "ovn-k8s-mp0", "nodad"});
    runChecked({"ip", "addr", "add", "fc00:f853:ccd:e793::2/64", "dev", "breth0", "nodad"});
    runChecked({"ip", "-6", "neigh", "replace", "fc00:f853:ccd:e793::3", "lladdr", "02:42:ac:1f:00:03", "dev", "breth0", "nud", "permanent"});
    writeConfig(", physical: breth0",
                "- {name: node1, nodeIPs: ['fc00:f853:ccd:e793::2', 172.31.0.2]}\n"
                "- {name: node2, nodeIPs: ['fc00:f853:ccd:e793::3', 172.31.0.3]}\n");
    auto before = rows();
    AgentProcess agent(dir() + "/agent.yaml", dir() + "/agent.sock", dir() + "/agent.log");
    ASSERT_EQ(agent.waitReady(), "");
    auto routes = ovs.appctl({"ovs/route/show"});
    EXPECT_NE(routes.find("fc00:f853:ccd:e793::3/128 dev breth0"), std::string::npos) << routes << agent.log();
    auto neigh = ovs.appctl({"tnl/neigh/show"});
    EXPECT_NE(neigh.find("fc00:f853:ccd:e793::3"), std::string::npos) << neigh;
    EXPECT_EQ(rows(), before) << "kovs changed OVSDB rows of the other CNI (or added its own)\n" << agent.log();
    auto status = unixJsonRequest(dir() + "/agent.sock", {{"command", "status"}}, 2000);
    EXPECT_EQ(status["gateway"]["addresses"], nlohmann::json::array({"10.244.1.2/24", "fd00:10:244:1::2/64"})) << status["gateway"].dump();
    runChecked({"ip", "-6", "addr", "flush", "dev", "ovn-k8s-mp0", "scope", "global"});
    EXPECT_TRUE(pollUntil([] { return runProcess({"ip", "-6", "addr", "show", "dev", "ovn-k8s-mp0"}).out.find("fd00:10:244:1::2/64") != std::string::npos; }, 5s))
        << "the management port's IPv6 address did not come back\n" << agent.log();
}

// kovs starting first must not make the other CNI's bridge or gateway its own
// (OVN-K's management port, antrea-gw0): it waits and guards them once they exist.
TEST_F(CompanionAgentTest, StartedBeforeTheCniItCreatesNothingAndGuardsTheGatewayLater) {
    writeConfig("");
    AgentProcess agent(dir() + "/agent.yaml", dir() + "/agent.sock", dir() + "/agent.log");
    std::string why;
    EXPECT_TRUE(pollUntil([&] {
        try {
            why = unixJsonRequest(dir() + "/agent.sock", {{"command", "status"}}, 1000).value("notReadyReason", "");
        } catch (const std::exception& e) {
            why = e.what();
        }
        return why == "ovn-k8s-mp0 missing";
    }, 30s)) << why << "\n" << agent.log();
    EXPECT_EQ(ovs.vsctl({"list-br"}), "") << agent.log();
    EXPECT_EQ(ovs.vsctl({"--bare", "--columns=name", "list", "Interface"}), "");
    ovnCreatesItsBridge();
    ASSERT_EQ(agent.waitReady(), "");
    EXPECT_EQ(ovs.vsctl({"list-ports", "br-int"}), "ovn-k8s-mp0\novn-node2-0\n") << "no tun0, no gateway of kovs's";
    EXPECT_EQ(ovs.vsctl({"--bare", "--columns=name", "find", "Port", "external_ids:kovs-owner=kovs-agent"}), "");
    runChecked({"ip", "addr", "flush", "dev", "ovn-k8s-mp0"});
    EXPECT_TRUE(pollUntil([] { return runProcess({"ip", "-4", "addr", "show", "dev", "ovn-k8s-mp0"}).out.find("10.244.1.2/24") != std::string::npos; }, 5s))
        << "the management port's address did not come back\n" << agent.log();
}
