// The standalone flow table as text: the pipeline of flows/FlowTable.hpp for
// a two-node cluster, its determinism, and what it refuses.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "base/Error.hpp"
#include "flows/FlowTable.hpp"

using kovs::IpPrefix;
using kovs::flows::FlowInputs;
using kovs::flows::FlowPod;
using kovs::flows::FlowPeer;
using kovs::flows::FlowTable;

namespace {

FlowPeer peer(const char* nodeIP, std::vector<const char*> cidrs) {
    FlowPeer p{IpPrefix::parse(nodeIP), {}, {IpPrefix::parse(nodeIP)}};
    for (const auto* c : cidrs) p.podCIDRs.push_back(IpPrefix::parse(c));
    return p;
}

FlowInputs twoNodeInputs() {
    FlowInputs in;
    in.tunnelOfport = 2;
    in.gateway = {"aa:bb:cc:00:00:01", 1};
    in.gatewayAddresses = {IpPrefix::parse("10.244.1.1/24")};
    in.pods = {{"pod1", "0a:58:0a:f4:01:05", {"10.244.1.5/24"}, 7}};
    in.peers = {peer("172.18.0.3", {"10.244.2.0/24"})};
    return in;
}

bool hasLine(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

}  // namespace

TEST(FlowTable, IngressTrustsTheGatewayKnownPeersAndPodsWithTheirOwnAddresses) {
    auto t = FlowTable::render(twoNodeInputs()).text();
    EXPECT_TRUE(hasLine(t, "table=0,priority=200,in_port=1 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=200,in_port=2,tun_src=172.18.0.3 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=190,cookie=0x6b01,in_port=2 actions=drop")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=200,in_port=7,dl_src=0a:58:0a:f4:01:05,ip,nw_src=10.244.1.5 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=200,in_port=7,dl_src=0a:58:0a:f4:01:05,arp,arp_spa=10.244.1.5,"
                           "arp_sha=0a:58:0a:f4:01:05 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=190,cookie=0x6b02,in_port=7 actions=drop")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=0 actions=drop")) << t;
}

TEST(FlowTable, RepliesOfKernelTranslatedConnectionsGoBackToTheGateway) {
    auto t = FlowTable::render(twoNodeInputs()).text();
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
    auto t = FlowTable::render(twoNodeInputs()).text();
    EXPECT_TRUE(hasLine(t, "table=30,priority=100,ip,nw_dst=10.244.2.0/24 actions=set_field:172.18.0.3->tun_dst,output:2")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=100,ip,nw_dst=10.244.1.5 actions=set_field:0a:58:0a:f4:01:05->eth_dst,output:7")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=50,ip actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=10,arp actions=NORMAL")) << t;
    EXPECT_NE(t.find("table=30,priority=200,arp,arp_op=1,arp_tpa=10.244.2.0/24"), std::string::npos) << t;
    EXPECT_NE(t.find("load:0xaabbcc000001->NXM_NX_ARP_SHA[]"), std::string::npos) << t;
    // From the tunnel: the peer's pods straight to the pod, the peer node through the node's kernel.
    EXPECT_TRUE(hasLine(t, "table=40,priority=100,tun_src=172.18.0.3,ip,nw_src=10.244.2.0/24 actions=goto_table:41")) << t;
    EXPECT_TRUE(hasLine(t, "table=40,priority=100,tun_src=172.18.0.3,ip,nw_src=172.18.0.3 "
                           "actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
    EXPECT_TRUE(hasLine(t, "table=41,priority=100,ip,nw_dst=10.244.1.5 actions=set_field:aa:bb:cc:00:00:01->eth_src,"
                           "set_field:0a:58:0a:f4:01:05->eth_dst,output:7")) << t;
    EXPECT_TRUE(hasLine(t, "table=41,priority=90,ip,nw_dst=10.244.1.0/24 actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
}

TEST(FlowTable, WithoutTheServiceReplyPathThereIsNoConntrack) {
    auto in = twoNodeInputs();
    in.serviceReplyPath = false;
    auto t = FlowTable::render(in).text();
    EXPECT_EQ(t.find("ct("), std::string::npos) << t;
    EXPECT_TRUE(hasLine(t, "table=10,priority=0 actions=goto_table:30")) << t;
}

TEST(FlowTable, SameDesiredStateSameText) {
    auto a = twoNodeInputs();
    auto b = twoNodeInputs();
    b.peers.insert(b.peers.begin(), peer("172.18.0.4", {"10.244.3.0/24"}));
    a.peers.push_back(peer("172.18.0.4", {"10.244.3.0/24"}));
    EXPECT_EQ(FlowTable::render(a).text(), FlowTable::render(b).text());
}

TEST(FlowTable, OnePeerWithTwoPodCidrsIsAcceptedOnceOnTheTunnel) {
    auto in = twoNodeInputs();
    in.peers[0].podCIDRs.push_back(IpPrefix::parse("10.245.2.0/24"));
    auto t = FlowTable::render(in).text();
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
    auto noGatewayAddress = twoNodeInputs();
    noGatewayAddress.gatewayAddresses = {};
    EXPECT_THROW(FlowTable::render(noGatewayAddress), kovs::Error);
    for (const char* tight : {"10.244.1.1/32", "10.244.1.0/31", "fd00:10:244:1::1/127"}) {
        auto noRoomForPods = twoNodeInputs();
        noRoomForPods.gatewayAddresses = {IpPrefix::parse(tight)};
        EXPECT_THROW(FlowTable::render(noRoomForPods), kovs::Error) << tight;
    }
    auto twoOfAFamily = twoNodeInputs();
    twoOfAFamily.gatewayAddresses.push_back(IpPrefix::parse("10.245.1.1/24"));
    EXPECT_THROW(FlowTable::render(twoOfAFamily), kovs::Error);
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
    EXPECT_EQ(t.text(), FlowTable::render(twoNodeInputs()).text()) << "the good pod and the peers keep their flows";
    EXPECT_EQ(t.ports, (std::set<std::string>{"pod1"}));
    EXPECT_EQ(t.skipped, (std::vector<std::string>{
                             "flow table: pod nofport: no OpenFlow port yet",
                             "flow table: pod badmac: not a MAC address: '0a:58:0a:f4:01'",
                             "flow table: pod multicast: not a unicast MAC address: 01:00:5e:00:00:01",
                             "flow table: pod injected: not an IP address: '10.244.1.8,actions=drop'",
                             "flow table: pod elsewhere: 10.244.2.9 is outside this node's pod CIDR 10.244.1.0/24",
                             "flow table: pod gateway: 10.244.1.1 is the pod CIDR's gateway address",
                             "flow table: pod network: 10.244.1.0 is the pod CIDR's network address",
                             "flow table: pod v6only: fd00:10:244:1::c: this node has no pod CIDR of its family",
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
    EXPECT_EQ(t.text(), FlowTable::render(twoNodeInputs()).text());
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

namespace {

// kind's `ipFamily: dual`: a /24 and a /64 per node, the tunnel over IPv4.
FlowInputs dualStackInputs() {
    auto in = twoNodeInputs();
    in.gatewayAddresses.push_back(IpPrefix::parse("fd00:10:244:1::1/64"));
    in.pods[0].addresses.push_back("fd00:10:244:1::5/64");
    in.peers[0].podCIDRs.push_back(IpPrefix::parse("fd00:10:244:2::/64"));
    in.peers[0].nodeIPs.push_back(IpPrefix::parse("fc00:f853:ccd:e793::3"));
    return in;
}

size_t countOf(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t p = 0; (p = text.find(what, p)) != std::string::npos; ++p) ++n;
    return n;
}

}  // namespace

TEST(FlowTable, AnIPv4OnlyNodeHasNoIPv6Stage) {
    auto in = twoNodeInputs();
    in.peers[0].podCIDRs.push_back(IpPrefix::parse("fd00:10:244:2::/64"));  // a dual-stack peer
    auto t = FlowTable::render(in).text();
    EXPECT_EQ(t, FlowTable::render(twoNodeInputs()).text()) << "a peer's IPv6 pod CIDR means nothing without one here";
    EXPECT_EQ(t.find("ipv6"), std::string::npos) << t;
    EXPECT_EQ(t.find("table=5,"), std::string::npos) << t;
}

TEST(FlowTable, ADualStackPodSendsOnlyFromItsAddressesAndItsLinkLocal) {
    auto t = FlowTable::render(dualStackInputs()).text();
    const std::string pod = "in_port=7,dl_src=0a:58:0a:f4:01:05,";
    EXPECT_TRUE(hasLine(t, "table=0,priority=200," + pod + "ip,nw_src=10.244.1.5 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=200," + pod + "ipv6,ipv6_src=fd00:10:244:1::5 actions=goto_table:5")) << t;
    // 0a:58:0a:f4:01:05 -> modified EUI-64 0858:0aff:fef4:0105.
    EXPECT_TRUE(hasLine(t, "table=0,priority=200," + pod + "ipv6,ipv6_src=fe80::858:aff:fef4:105 actions=goto_table:5")) << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=200," + pod + "icmp6,icmp_type=135,ipv6_src=:: actions=goto_table:5")) << t;
    EXPECT_EQ(countOf(t, "table=0,priority=200," + pod), 5u) << "IPv4, ARP, IPv6, link-local, DAD:\n" << t;
    EXPECT_TRUE(hasLine(t, "table=0,priority=190,cookie=0x6b02,in_port=7 actions=drop")) << t;
}

TEST(FlowTable, APodsNeighbourDiscoveryIsForItsOwnAddressesAndRouterMessagesAreDropped) {
    auto t = FlowTable::render(dualStackInputs()).text();
    for (const char* own : {"fd00:10:244:1::5", "fe80::858:aff:fef4:105"}) {
        for (const char* lla : {"0a:58:0a:f4:01:05", "00:00:00:00:00:00"})
            EXPECT_TRUE(hasLine(t, fmt::format("table=5,priority=200,in_port=7,icmp6,icmp_type=136,nd_target={},nd_tll={} "
                                               "actions=goto_table:10", own, lla)))
                << t;
        EXPECT_TRUE(hasLine(t, fmt::format("table=5,priority=210,in_port=7,icmp6,icmp_type=135,ipv6_src=::,nd_target={},"
                                           "nd_sll=00:00:00:00:00:00 actions=goto_table:10", own)))
            << t;
    }
    EXPECT_TRUE(hasLine(t, "table=5,priority=205,cookie=0x6b02,in_port=7,icmp6,icmp_type=135,ipv6_src=:: actions=drop")) << t;
    EXPECT_TRUE(hasLine(t, "table=5,priority=200,in_port=7,icmp6,icmp_type=135,nd_sll=0a:58:0a:f4:01:05 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=5,priority=190,cookie=0x6b02,icmp6,icmp_type=136 actions=drop")) << t;
    EXPECT_TRUE(hasLine(t, "table=5,priority=190,cookie=0x6b04,icmp6,icmp_type=134 actions=drop")) << t;
    EXPECT_TRUE(hasLine(t, "table=5,priority=190,cookie=0x6b04,icmp6,icmp_type=137 actions=drop")) << t;
    EXPECT_TRUE(hasLine(t, "table=5,priority=0 actions=goto_table:10")) << t;
}

TEST(FlowTable, BothFamiliesAreForwardedTrackedAndTunnelledOverTheIPv4Underlay) {
    auto t = FlowTable::render(dualStackInputs()).text();
    EXPECT_TRUE(hasLine(t, "table=10,priority=100,in_port=1,ipv6 actions=ct(table=20,zone=107)")) << t;
    EXPECT_TRUE(hasLine(t, "table=10,priority=90,ipv6,ipv6_dst=fd00:10:244:1::/64 actions=ct(table=20,zone=107)")) << t;
    EXPECT_TRUE(hasLine(t, "table=10,priority=90,ipv6,ipv6_dst=fd00:10:244:2::/64 actions=ct(table=20,zone=107)")) << t;
    EXPECT_TRUE(hasLine(t, "table=10,priority=110,icmp6,icmp_type=135 actions=goto_table:30")) << t;
    EXPECT_TRUE(hasLine(t, "table=20,priority=190,ct_state=+rpl+trk,ct_mark=0x1/0x1,ipv6 "
                           "actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=100,ipv6,ipv6_dst=fd00:10:244:2::/64 actions=set_field:172.18.0.3->tun_dst,output:2")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=100,ipv6,ipv6_dst=fd00:10:244:1::5 actions=set_field:0a:58:0a:f4:01:05->eth_dst,output:7"))
        << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=100,ipv6,ipv6_dst=fe80::858:aff:fef4:105 "
                           "actions=set_field:0a:58:0a:f4:01:05->eth_dst,output:7")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=50,ipv6 actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=60,icmp6,icmp_type=135 actions=NORMAL")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=55,ipv6,ipv6_dst=ff00::/8 actions=drop")) << t;
    // The node's solicitation for a peer's pod is answered with the gateway MAC.
    EXPECT_NE(t.find("table=30,priority=200,icmp6,icmp_type=135,nd_target=fd00:10:244:2::/64 actions="), std::string::npos) << t;
    EXPECT_NE(t.find("set_field:136->icmpv6_type,set_field:0x60000000->nd_reserved,set_field:2->nd_options_type,resubmit(,31)"),
              std::string::npos) << t;
    EXPECT_TRUE(hasLine(t, "table=31,priority=100,icmp6,icmp_type=136 actions=set_field:aa:bb:cc:00:00:01->nd_tll,IN_PORT")) << t;
    EXPECT_TRUE(hasLine(t, "table=40,priority=100,tun_src=172.18.0.3,ipv6,ipv6_src=fd00:10:244:2::/64 actions=goto_table:41")) << t;
    EXPECT_TRUE(hasLine(t, "table=40,priority=100,tun_src=172.18.0.3,ipv6,ipv6_src=fc00:f853:ccd:e793::3 "
                           "actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
    EXPECT_TRUE(hasLine(t, "table=41,priority=100,ipv6,ipv6_dst=fd00:10:244:1::5 actions=set_field:aa:bb:cc:00:00:01->eth_src,"
                           "set_field:0a:58:0a:f4:01:05->eth_dst,output:7")) << t;
    EXPECT_TRUE(hasLine(t, "table=41,priority=90,ipv6,ipv6_dst=fd00:10:244:1::/64 actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1"))
        << t;
}

// kind's `ipFamily: ipv6`: the tunnel runs over the IPv6 underlay.
TEST(FlowTable, AnIPv6ClusterTunnelsOverTheIPv6Underlay) {
    FlowInputs in;
    in.tunnelOfport = 2;
    in.gateway = {"aa:bb:cc:00:00:01", 1};
    in.gatewayAddresses = {IpPrefix::parse("fd00:10:244:1::1/64")};
    in.pods = {{"pod1", "0a:58:0a:f4:01:05", {"fd00:10:244:1::5/64"}, 7}};
    in.peers = {peer("fc00:f853:ccd:e793::3", {"fd00:10:244:2::/64"})};
    auto t = FlowTable::render(in).text();
    EXPECT_TRUE(hasLine(t, "table=0,priority=200,in_port=2,tun_ipv6_src=fc00:f853:ccd:e793::3 actions=goto_table:10")) << t;
    EXPECT_TRUE(hasLine(t, "table=30,priority=100,ipv6,ipv6_dst=fd00:10:244:2::/64 "
                           "actions=set_field:fc00:f853:ccd:e793::3->tun_ipv6_dst,output:2")) << t;
    EXPECT_TRUE(hasLine(t, "table=40,priority=100,tun_ipv6_src=fc00:f853:ccd:e793::3,ipv6,ipv6_src=fd00:10:244:2::/64 "
                           "actions=goto_table:41")) << t;
    EXPECT_EQ(t.find("nw_"), std::string::npos) << "no IPv4 forwarding without an IPv4 pod CIDR:\n" << t;
    EXPECT_EQ(t.find("ip actions"), std::string::npos) << t;

    auto v4pod = in;
    v4pod.pods.push_back({"v4", "0a:58:0a:f4:01:06", {"10.244.1.6/24"}, 8});
    v4pod.pods.push_back({"outside", "0a:58:0a:f4:01:07", {"fd00:10:244:2::7/64"}, 9});
    v4pod.pods.push_back({"gateway6", "0a:58:0a:f4:01:08", {"fd00:10:244:1::1"}, 10});
    EXPECT_EQ(FlowTable::render(v4pod).skipped, (std::vector<std::string>{
                                                    "flow table: pod v4: 10.244.1.6: this node has no pod CIDR of its family",
                                                    "flow table: pod outside: fd00:10:244:2::7 is outside this node's pod CIDR "
                                                    "fd00:10:244:1::/64",
                                                    "flow table: pod gateway6: fd00:10:244:1::1 is the pod CIDR's gateway address",
                                                }));
}

// A VXLAN packet carries no proof of its sender: the inner source must be one
// the outer source may use, or any container on the kind network that sends
// from a peer's address could speak for every node's pods.
TEST(FlowTable, FromTheTunnelEachPeerSpeaksOnlyForItsOwnPodsAndItself) {
    auto in = dualStackInputs();
    in.peers.push_back(peer("172.18.0.4", {"10.244.3.0/24"}));
    auto t = FlowTable::render(in).text();
    EXPECT_TRUE(hasLine(t, "table=40,priority=100,tun_src=172.18.0.4,ip,nw_src=10.244.3.0/24 actions=goto_table:41")) << t;
    EXPECT_EQ(t.find("tun_src=172.18.0.3,ip,nw_src=10.244.3.0/24"), std::string::npos) << t;
    EXPECT_EQ(t.find("tun_src=172.18.0.4,ip,nw_src=10.244.2.0/24"), std::string::npos) << t;
    EXPECT_EQ(countOf(t, "table=40,"), 7u) << "pods and node of each family of each peer (the second has no IPv6), and the drop:\n" << t;
    EXPECT_TRUE(hasLine(t, "table=40,priority=0,cookie=0x6b03 actions=drop")) << t;
}

TEST(FlowTable, IPv6HoldersAreReadBackToo) {
    kovs::flows::FlowDump dump;
    dump.flows =
        "cookie=0x0, table=0, priority=200,ipv6,in_port=7,dl_src=0a:58:0a:f4:01:05,ipv6_src=fd00:10:244:1::5 actions=goto_table:5\n"
        "cookie=0x0, table=0, priority=200,icmp6,in_port=7,dl_src=0a:58:0a:f4:01:05,ipv6_src=::,icmp_type=135 actions=goto_table:5\n";
    std::vector<FlowPod> pods{{"pod1", "", {}, 7}};
    EXPECT_EQ(FlowTable::holdersIn(dump, pods),
              (std::map<std::string, std::string>{{"fd00:10:244:1::5", "pod1"}, {"0a:58:0a:f4:01:05", "pod1"}}));
}
