// The standalone flow table as text: the pipeline of flows/FlowTable.hpp for
// a two-node cluster, its determinism, and what it refuses.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "base/Error.hpp"
#include "flows/FlowTable.hpp"

using kovs::IpPrefix;
using kovs::flows::FlowInputs;
using kovs::flows::FlowPod;
using kovs::flows::FlowRemoteSubnet;
using kovs::flows::FlowTable;

namespace {

FlowRemoteSubnet remote(const char* cidr, const char* nodeIP) { return {IpPrefix::parse(cidr), IpPrefix::parse(nodeIP)}; }

FlowInputs twoNodeInputs() {
    FlowInputs in;
    in.tunnelOfport = 2;
    in.gateway = {"aa:bb:cc:00:00:01", 1};
    in.gatewayAddress = IpPrefix::parse("10.244.1.1/24");
    in.pods = {{"pod1", "0a:58:0a:f4:01:05", {"10.244.1.5/24"}, 7}};
    in.remotes = {remote("10.244.2.0/24", "172.18.0.3")};
    return in;
}

bool hasLine(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

}  // namespace

TEST(FlowTable, IngressTrustsTheGatewayKnownPeersAndPodsWithTheirOwnAddresses) {
    auto t = FlowTable::render(twoNodeInputs()).flows;
    EXPECT_TRUE(hasLine(t, "table=0,priority=200,in_port=1 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=200,in_port=2,tun_src=172.18.0.3 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=190,cookie=0x6b01,in_port=2 actions=drop")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=200,in_port=7,dl_src=0a:58:0a:f4:01:05,ip,nw_src=10.244.1.5 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=200,in_port=7,dl_src=0a:58:0a:f4:01:05,arp,arp_spa=10.244.1.5,"
                           "arp_sha=0a:58:0a:f4:01:05 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=190,cookie=0x6b02,in_port=7 actions=drop")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=0,actions=drop")) << t;
}

TEST(FlowTable, RepliesOfKernelTranslatedConnectionsGoBackToTheGateway) {
    auto t = FlowTable::render(twoNodeInputs()).flows;
    EXPECT_TRUE(hasLine(t, "table=10,priority=100,in_port=1,ip actions=ct(table=20,zone=107)")) << t;
    EXPECT_TRUE(hasLine(t, "table=10,priority=100,in_port=2,ip actions=ct(table=20,zone=107)")) << t;
    EXPECT_TRUE(hasLine(t, "table=10,priority=90,ip,nw_dst=10.244.1.0/24 actions=ct(table=20,zone=107)")) << t;
    EXPECT_TRUE(hasLine(t, "table=10,priority=90,ip,nw_dst=10.244.2.0/24 actions=ct(table=20,zone=107)")) << t;
    EXPECT_TRUE(hasLine(t, "table=20,priority=200,ct_state=+new+trk,in_port=1,ip "
                           "actions=ct(commit,zone=107,exec(set_field:0x1/0x1->ct_mark)),goto_table:30")) << t;
    EXPECT_TRUE(hasLine(t, "table=20,priority=190,ct_state=+rpl+trk,ct_mark=0x1/0x1,ip "
                           "actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
}

TEST(FlowTable, ForwardsToPeersPodsAndTheGateway) {
    auto t = FlowTable::render(twoNodeInputs()).flows;
    EXPECT_TRUE(hasLine(t, "table=30,priority=100,ip,nw_dst=10.244.2.0/24 actions=set_field:172.18.0.3->tun_dst,output:2")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=100,ip,nw_dst=10.244.1.5 actions=set_field:0a:58:0a:f4:01:05->eth_dst,output:7")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=50,ip actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=10,arp actions=NORMAL")) << t;
    EXPECT_NE(t.find("table=30,priority=200,arp,arp_op=1,arp_tpa=10.244.2.0/24"), std::string::npos) << t;
    EXPECT_NE(t.find("load:0xaabbcc000001->NXM_NX_ARP_SHA[]"), std::string::npos) << t;
    // From the tunnel: remote pods straight to the pod, anything else through the node's kernel.
    EXPECT_TRUE(hasLine(t, "table=40,priority=100,ip,nw_src=10.244.2.0/24 actions=goto_table:41")) << t;
    EXPECT_TRUE(hasLine(t, "table=40,priority=50,ip actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
    EXPECT_TRUE(hasLine(t, "table=41,priority=100,ip,nw_dst=10.244.1.5 actions=set_field:aa:bb:cc:00:00:01->eth_src,"
                           "set_field:0a:58:0a:f4:01:05->eth_dst,output:7")) << t;
    EXPECT_TRUE(hasLine(t, "table=41,priority=90,ip,nw_dst=10.244.1.0/24 actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
}

TEST(FlowTable, WithoutTheServiceReplyPathThereIsNoConntrack) {
    auto in = twoNodeInputs();
    in.serviceReplyPath = false;
    auto t = FlowTable::render(in).flows;
    EXPECT_EQ(t.find("ct("), std::string::npos) << t;
    EXPECT_TRUE(hasLine(t, "table=10,priority=0,actions=goto_table:30")) << t;
}

TEST(FlowTable, SameDesiredStateSameText) {
    auto a = twoNodeInputs();
    auto b = twoNodeInputs();
    b.remotes.insert(b.remotes.begin(), remote("10.244.3.0/24", "172.18.0.4"));
    a.remotes.push_back(remote("10.244.3.0/24", "172.18.0.4"));
    EXPECT_EQ(FlowTable::render(a).flows, FlowTable::render(b).flows);
}

TEST(FlowTable, OnePeerWithTwoPodCidrsIsAcceptedOnceOnTheTunnel) {
    auto in = twoNodeInputs();
    in.remotes.push_back(remote("10.245.2.0/24", "172.18.0.3"));
    auto t = FlowTable::render(in).flows;
    size_t n = 0;
    for (size_t p = 0; (p = t.find("tun_src=172.18.0.3 ", p)) != std::string::npos; ++p) ++n;
    EXPECT_EQ(n, 1u) << t;
}

TEST(FlowTable, RejectsUnusableInputs) {
    auto noTunnel = twoNodeInputs();
    noTunnel.tunnelOfport = -1;
    EXPECT_THROW(FlowTable::render(noTunnel), kovs::Error);
    auto badMac = twoNodeInputs();
    badMac.gateway.mac = "0a:58:0a:f4:01";
    EXPECT_THROW(FlowTable::render(badMac), kovs::Error);
    auto v6Peer = twoNodeInputs();
    v6Peer.remotes[0].cidr = IpPrefix::parse("fd00:10:244:2::/64");
    EXPECT_THROW(FlowTable::render(v6Peer), kovs::Error);
    auto noGatewayAddress = twoNodeInputs();
    noGatewayAddress.gatewayAddress = {};
    EXPECT_THROW(FlowTable::render(noGatewayAddress), kovs::Error);
    auto noRoomForPods = twoNodeInputs();
    noRoomForPods.gatewayAddress = IpPrefix::parse("10.244.1.1/32");
    EXPECT_THROW(FlowTable::render(noRoomForPods), kovs::Error);
}

// One pod's row in OVSDB (written by kovs-cni, or by anyone with access to
// the database) must not take every other pod's and peer's flows down.
TEST(FlowTable, LeavesOutOnlyThePodThatIsUnusable) {
    auto in = twoNodeInputs();
    in.pods.push_back({"nofport", "0a:58:0a:f4:01:06", {"10.244.1.6/24"}, -1});
    in.pods.push_back({"badmac", "0a:58:0a:f4:01", {"10.244.1.7/24"}, 9});
    in.pods.push_back({"multicast", "01:00:5e:00:00:01", {"10.244.1.7/24"}, 9});
    in.pods.push_back({"injected", "0a:58:0a:f4:01:08", {"10.244.1.8,actions=drop"}, 10});
    in.pods.push_back({"elsewhere", "0a:58:0a:f4:01:09", {"10.244.2.9/24"}, 11});  // a peer's pod CIDR
    in.pods.push_back({"gateway", "0a:58:0a:f4:01:0a", {"10.244.1.1/24"}, 12});
    in.pods.push_back({"network", "0a:58:0a:f4:01:0b", {"10.244.1.0/24"}, 13});
    in.pods.push_back({"v6only", "0a:58:0a:f4:01:0c", {"fd00:10:244:1::c/64"}, 14});
    auto t = FlowTable::render(in);
    EXPECT_EQ(t.flows, FlowTable::render(twoNodeInputs()).flows) << "the good pod and the peers keep their flows";
    EXPECT_EQ(t.ports, (std::set<std::string>{"pod1"}));
    EXPECT_EQ(t.skipped, (std::vector<std::string>{
                             "flow table: pod nofport: no OpenFlow port yet",
                             "flow table: pod badmac: not a MAC address: '0a:58:0a:f4:01'",
                             "flow table: pod multicast: not a unicast MAC address: 01:00:5e:00:00:01",
                             "flow table: pod injected: not an IP address: '10.244.1.8,actions=drop'",
                             "flow table: pod elsewhere: 10.244.2.9 is outside this node's pod CIDR 10.244.1.0/24",
                             "flow table: pod gateway: 10.244.1.1 is the pod CIDR's gateway address",
                             "flow table: pod network: 10.244.1.0 is the pod CIDR's network address",
                             "flow table: pod v6only: not an IPv4 address: fd00:10:244:1::c",
                         }));
}

// Two rows claiming one address or MAC: the one that held it in the last
// table keeps it (a running pod against a newer row); where none held it,
// neither gets it (nothing in OVSDB says which is the real pod). Every other
// pod keeps its flows.
TEST(FlowTable, OfTwoPodsClaimingOneAddressOnlyTheHolderKeepsIt) {
    auto in = twoNodeInputs();
    in.pods.push_back({"thief", "0a:58:0a:f4:01:66", {"10.244.1.5"}, 9});
    in.pods.push_back({"mimic", "0a:58:0a:f4:01:05", {"10.244.1.7/24"}, 10});  // pod1's MAC
    in.holders = FlowTable::render(twoNodeInputs()).holders;
    auto t = FlowTable::render(in);
    EXPECT_EQ(t.flows, FlowTable::render(twoNodeInputs()).flows);
    EXPECT_EQ(t.ports, (std::set<std::string>{"pod1"}));
    EXPECT_EQ(t.skipped, (std::vector<std::string>{
                             "flow table: pod thief: 10.244.1.5 is pod1's, which holds it: refused",
                             "flow table: pod mimic: 0a:58:0a:f4:01:05 is pod1's, which holds it: refused",
                         }));

    in.holders.clear();  // e.g. the agent's first pass with both rows there
    t = FlowTable::render(in);
    EXPECT_TRUE(t.ports.empty());
    EXPECT_EQ(t.skipped, (std::vector<std::string>{
                             "flow table: pod pod1: 10.244.1.5 is claimed by pod1, thief, and none holds it: refused",
                             "flow table: pod thief: 10.244.1.5 is claimed by pod1, thief, and none holds it: refused",
                             "flow table: pod mimic: 0a:58:0a:f4:01:05 is claimed by mimic, pod1, and none holds it: refused",
                         }));
}

TEST(FlowTable, HoldersAreReadBackFromTheSourceChecksOfTableZero) {
    kovs::flows::FlowDump dump;
    dump.flows =
        "cookie=0x0, priority=200,ip,in_port=7,dl_src=0a:58:0a:f4:01:05,nw_src=10.244.1.5 actions=goto_table:10\n"
        "cookie=0x0, table=0, priority=200,ip,in_port=8,dl_src=0a:58:0a:f4:01:06,nw_src=10.244.1.6 actions=goto_table:10\n"
        "cookie=0x0, table=0, priority=200,arp,in_port=8,dl_src=0a:58:0a:f4:01:06,arp_spa=10.244.1.6 actions=goto_table:10\n"
        "cookie=0x0, table=30, priority=100,ip,in_port=9,dl_src=0a:58:0a:f4:01:09,nw_src=10.244.1.9 actions=drop\n"
        "cookie=0x0, table=0, priority=200,ip,in_port=99,dl_src=0a:58:0a:f4:01:63,nw_src=10.244.1.99 actions=goto_table:10\n";
    std::vector<FlowPod> pods{{"pod1", "", {}, 7}, {"pod2", "", {}, 8}, {"pod9", "", {}, 9}};
    EXPECT_EQ(FlowTable::holdersIn(dump, pods), (std::map<std::string, std::string>{{"10.244.1.5", "pod1"},
                                                                                   {"0a:58:0a:f4:01:05", "pod1"},
                                                                                   {"10.244.1.6", "pod2"},
                                                                                   {"0a:58:0a:f4:01:06", "pod2"}}));
}
