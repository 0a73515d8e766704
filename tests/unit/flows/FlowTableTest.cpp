#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "flows/FlowTable.hpp"

using kovs::FlowInputs;
using kovs::FlowTable;

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

TEST(FlowTable, RendersTheStandaloneTable) {
    auto t = FlowTable::render(twoNodeInputs());
    EXPECT_TRUE(hasLine(t, "priority=100,ip,nw_dst=10.244.2.0/24 actions=set_field:172.18.0.3->tun_dst,output:2")) << t;
    EXPECT_TRUE(hasLine(t, "priority=100,in_port=2,ip,nw_dst=10.244.1.5 actions=set_field:aa:bb:cc:00:00:01->eth_src,"
                           "set_field:0a:58:0a:f4:01:05->eth_dst,output:7")) << t;
    EXPECT_TRUE(hasLine(t, "priority=95,in_port=2,ip,nw_dst=10.244.1.0/24 actions=set_field:aa:bb:cc:00:00:01->eth_dst,output:1")) << t;
    EXPECT_TRUE(hasLine(t, "priority=90,in_port=2 actions=drop")) << t;
    EXPECT_TRUE(hasLine(t, "priority=10 actions=NORMAL")) << t;
    EXPECT_NE(t.find("priority=200,arp,arp_op=1,arp_tpa=10.244.2.0/24"), std::string::npos) << t;
    EXPECT_NE(t.find("load:0xaabbcc000001->NXM_NX_ARP_SHA[]"), std::string::npos) << t;
}

TEST(FlowTable, SameDesiredStateSameText) {
    auto a = twoNodeInputs();
    auto b = twoNodeInputs();
    b.remotes.insert(b.remotes.begin(), {"10.244.3.0/24", "172.18.0.4"});
    a.remotes.push_back({"10.244.3.0/24", "172.18.0.4"});
    EXPECT_EQ(FlowTable::render(a), FlowTable::render(b));
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
    in.pods.push_back({"10.244.1.6", "0a:58:0a:f4:01:06", -1});                // no ofport yet
    in.pods.push_back({"10.244.1.7", "0a:58:0a:f4:01", 9});                    // bad MAC
    in.pods.push_back({"10.244.1.8,actions=drop", "0a:58:0a:f4:01:08", 10});   // injected
    std::vector<std::string> skipped;
    auto t = FlowTable::render(in, &skipped);
    EXPECT_EQ(t, FlowTable::render(twoNodeInputs())) << "the good pod and the peers keep their flows";
    EXPECT_EQ(skipped, (std::vector<std::string>{"flow table: pod 10.244.1.6: no OpenFlow port yet",
                                                 "flow table: pod: not a MAC address: '0a:58:0a:f4:01'",
                                                 "flow table: pod: not an IPv4 address: '10.244.1.8,actions=drop'"}));
}
