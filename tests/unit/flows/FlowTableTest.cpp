// The standalone flow table as text: the pipeline of flows/FlowTable.hpp for
// a two-node cluster, its determinism, and what it refuses.
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "flows/FlowTable.hpp"

using kovs::flows::FlowInputs;
using kovs::flows::FlowTable;

namespace {

FlowInputs twoNodeInputs() {
    FlowInputs in;
    in.tunnelOfport = 2;
    in.gateway = {"aa:bb:cc:00:00:01", 1};
    in.localCidr = "10.244.1.0/24";
    in.pods = {{"10.244.1.5", "0a:58:0a:f4:01:05", 7}};
    in.remotes = {{"10.244.2.0/24", "172.18.0.3"}};
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
    b.remotes.insert(b.remotes.begin(), {"10.244.3.0/24", "172.18.0.4"});
    a.remotes.push_back({"10.244.3.0/24", "172.18.0.4"});
    EXPECT_EQ(FlowTable::render(a).flows, FlowTable::render(b).flows);
}

TEST(FlowTable, OnePeerWithTwoPodCidrsIsAcceptedOnceOnTheTunnel) {
    auto in = twoNodeInputs();
    in.remotes.push_back({"10.245.2.0/24", "172.18.0.3"});
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
    auto badCidr = twoNodeInputs();
    badCidr.remotes[0].cidr = "10.244.2.0/40";
    EXPECT_THROW(FlowTable::render(badCidr), kovs::Error);
    auto injected = twoNodeInputs();
    injected.remotes[0].nodeIP = "172.18.0.3,actions=drop";
    EXPECT_THROW(FlowTable::render(injected), kovs::Error);
    auto noLocal = twoNodeInputs();
    noLocal.localCidr.clear();
    EXPECT_THROW(FlowTable::render(noLocal), kovs::Error);
}

// One pod's row in OVSDB (written by kovs-cni, or by anyone with access to
// the database) must not take every other pod's and peer's flows down.
TEST(FlowTable, LeavesOutOnlyThePodThatIsUnusable) {
    auto in = twoNodeInputs();
    in.pods.push_back({"10.244.1.6", "0a:58:0a:f4:01:06", -1});               // no ofport yet
    in.pods.push_back({"10.244.1.7", "0a:58:0a:f4:01", 9});                   // bad MAC
    in.pods.push_back({"10.244.1.8,actions=drop", "0a:58:0a:f4:01:08", 10});  // injected
    auto t = FlowTable::render(in);
    EXPECT_EQ(t.flows, FlowTable::render(twoNodeInputs()).flows) << "the good pod and the peers keep their flows";
    EXPECT_EQ(t.skipped, (std::vector<std::string>{"flow table: pod 10.244.1.6: no OpenFlow port yet",
                                                 "flow table: pod: not a MAC address: '0a:58:0a:f4:01'",
                                                 "flow table: pod: not an IPv4 address: '10.244.1.8,actions=drop'"}));
}
