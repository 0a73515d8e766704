// flows/PacketTrace: the packet a trace starts from, and OVS's trace told
// in words. The traces below are ofproto/trace's own output (OVS 3.1) for a
// table of kovs's shape with a conjunction rule, captured from a real
// vswitchd; integration and e2e tests run it live.
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "flows/PacketTrace.hpp"

using namespace kovs;
using namespace kovs::flows;

namespace {

FlowInputs node1() {
    FlowInputs in;
    in.tunnelOfport = 2;
    in.gateway = {"0a:58:0a:f4:01:01", 1};
    in.gatewayAddresses = {IpPrefix::parse("10.244.1.1/24"), IpPrefix::parse("fd00:10:244:1::1/64")};
    in.pods.push_back({"kovs1a2b3c4d", "0a:58:0a:f4:01:05", {"10.244.1.5/24", "fd00:10:244:1::5/64"}, 3, "x/a"});
    in.peers.push_back({IpPrefix::parse("172.18.0.3/32"), {IpPrefix::parse("10.244.2.0/24"), IpPrefix::parse("fd00:10:244:2::/64")},
                        {IpPrefix::parse("172.18.0.3/32")}});
    policy::CompiledRule rule;
    rule.id = 7;
    rule.ingress = false;
    rule.policy = "x/allow-web";
    rule.rule = 0;
    in.policy.rules.push_back(rule);
    return in;
}

TracePacket packet(const char* from, const char* to, int port = 80) {
    return {IpPrefix::parse(from), IpPrefix::parse(to), policy::Protocol::TCP, port};
}

const char* kAllowed = R"TRACE(Flow: tcp,in_port=3,vlan_tci=0x0000,dl_src=0a:58:0a:f4:01:05,dl_dst=0a:58:0a:f4:01:01,nw_src=10.244.1.5,nw_dst=10.244.2.7,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=no,tp_src=33333,tp_dst=80,tcp_flags=0

bridge("br-int")
----------------
 0. ip,in_port=3,dl_src=0a:58:0a:f4:01:05,nw_src=10.244.1.5, priority 100
    goto_table:10
10. ip, priority 100
    ct(table=20,zone=107)
    drop
     -> A clone of the packet is forked to recirculate. The forked pipeline will be resumed at table 20.
     -> Sets the packet to an untracked state, and clears all the conntrack fields.

Final flow: unchanged
Megaflow: recirc_id=0,eth,ip,in_port=3,dl_src=0a:58:0a:f4:01:05,nw_src=10.244.1.5,nw_frag=no
Datapath actions: ct(zone=107),recirc(0x3)

===============================================================================
recirc(0x3) - resume conntrack with ct_state=new|trk
===============================================================================

Flow: recirc_id=0x3,ct_state=new|trk,ct_zone=107,eth,tcp,in_port=3,vlan_tci=0x0000,dl_src=0a:58:0a:f4:01:05,dl_dst=0a:58:0a:f4:01:01,nw_src=10.244.1.5,nw_dst=10.244.2.7,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=no,tp_src=33333,tp_dst=80,tcp_flags=0

bridge("br-int")
----------------
    thaw
        Resuming from table 20
20. priority 0
    goto_table:24
22. conj_id=7,ip, priority 200, cookie 0x6b0000000007
    goto_table:26
24. priority 0
    goto_table:29
28. ip, priority 0
    ct(commit,zone=107)
    drop
     -> Sets the packet to an untracked state, and clears all the conntrack fields.
    goto_table:30
30. ip,nw_dst=10.244.2.0/24, priority 100
    set_field:172.18.0.3->tun_dst
    output:2
     -> output to native tunnel
     >> native tunnel routing failed

Final flow: recirc_id=0x3,eth,tcp,tun_src=0.0.0.0,tun_dst=172.18.0.3,tun_ipv6_src=::,tun_ipv6_dst=::,tun_gbp_id=0,tun_gbp_flags=0,tun_tos=0,tun_ttl=0,tun_erspan_ver=0,gtpu_flags=0,gtpu_msgtype=0,tun_flags=0,in_port=3,vlan_tci=0x0000,dl_src=0a:58:0a:f4:01:05,dl_dst=0a:58:0a:f4:01:01,nw_src=10.244.1.5,nw_dst=10.244.2.7,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=no,tp_src=33333,tp_dst=80,tcp_flags=0
Megaflow: recirc_id=0x3,eth,tcp,in_port=3,nw_src=10.244.1.5,nw_dst=10.244.2.0/24,nw_ecn=0,nw_frag=no,tp_dst=80
Datapath actions: ct(commit,zone=107)
)TRACE";
// The same packet to port 81, from its recirculation on (its first pass is kAllowed's).
const char* kDenied = R"TRACE(===============================================================================
recirc(0x4) - resume conntrack with ct_state=new|trk
===============================================================================

Flow: recirc_id=0x4,ct_state=new|trk,ct_zone=107,eth,tcp,in_port=3,vlan_tci=0x0000,dl_src=0a:58:0a:f4:01:05,dl_dst=0a:58:0a:f4:01:01,nw_src=10.244.1.5,nw_dst=10.244.2.7,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=no,tp_src=33333,tp_dst=81,tcp_flags=0

bridge("br-int")
----------------
    thaw
        Resuming from table 20
20. priority 0
    goto_table:24
22. ip,nw_src=10.244.1.5, priority 100, cookie 0x6b06
    drop

Final flow: unchanged
Megaflow: recirc_id=0x4,eth,tcp,in_port=3,nw_src=10.244.1.5,nw_dst=10.244.2.0/24,nw_frag=no,tp_dst=81
Datapath actions: drop
)TRACE";
const char* kSpoofed = R"TRACE(Flow: tcp,in_port=3,vlan_tci=0x0000,dl_src=0a:58:0a:f4:01:06,dl_dst=00:00:00:00:00:00,nw_src=10.244.1.6,nw_dst=10.244.2.7,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=no,tp_src=0,tp_dst=0,tcp_flags=0

bridge("br-int")
----------------
 0. priority 0, cookie 0x6b02
    drop

Final flow: unchanged
Megaflow: recirc_id=0,eth,ip,in_port=3,dl_src=0a:58:0a:f4:01:06,nw_frag=no
Datapath actions: drop
)TRACE";

}  // namespace

TEST(PacketTrace, ThePacketEntersWhereItWouldOnThisNode) {
    auto in = node1();
    EXPECT_EQ(traceFlow(in, packet("10.244.1.5", "10.244.2.7")),
              "in_port=3,dl_src=0a:58:0a:f4:01:05,dl_dst=0a:58:0a:f4:01:01,tcp,nw_src=10.244.1.5,nw_dst=10.244.2.7,tp_src=33333,tp_dst=80");
    EXPECT_EQ(traceFlow(in, packet("10.244.2.7", "10.244.1.5", 8080)),
              "in_port=2,tun_src=172.18.0.3,tcp,nw_src=10.244.2.7,nw_dst=10.244.1.5,tp_src=33333,tp_dst=8080")
        << "a peer's pod arrives through the tunnel from its node";
    EXPECT_EQ(traceFlow(in, packet("172.18.0.1", "10.244.1.5")),
              "in_port=1,dl_src=0a:58:0a:f4:01:01,tcp,nw_src=172.18.0.1,nw_dst=10.244.1.5,tp_src=33333,tp_dst=80")
        << "the world comes through the node's kernel";
    EXPECT_EQ(traceFlow(in, {IpPrefix::parse("fd00:10:244:1::5"), IpPrefix::parse("fd00:10:244:2::7"), policy::Protocol::SCTP, 9}),
              "in_port=3,dl_src=0a:58:0a:f4:01:05,dl_dst=0a:58:0a:f4:01:01,sctp6,ipv6_src=fd00:10:244:1::5,ipv6_dst=fd00:10:244:2::7,"
              "tp_src=33333,tp_dst=9");
}

TEST(PacketTrace, APacketThatNeverEntersHereIsAnError) {
    auto in = node1();
    EXPECT_THROW(traceFlow(in, packet("10.244.1.9", "10.244.2.7")), Error) << "no pod here has it";
    EXPECT_THROW(traceFlow(in, packet("10.244.2.7", "10.244.2.8")), Error) << "another node's pod to its own node";
    EXPECT_THROW(traceFlow(in, {IpPrefix::parse("10.244.1.5"), IpPrefix::parse("fd00::1"), policy::Protocol::TCP, 80}), Error);
    EXPECT_THROW(traceFlow(in, packet("10.244.1.5", "10.244.2.7", 0)), Error);
}

TEST(PacketTrace, AnAllowedPacketNamesItsRuleAndWhereItLeft) {
    auto e = explainTrace(kAllowed, node1());
    EXPECT_FALSE(e.dropped);
    ASSERT_EQ(e.steps.size(), 7u);
    EXPECT_EQ(e.steps[0].table, 0);
    EXPECT_EQ(e.steps[0].stage, "ingress: port and source check");
    EXPECT_EQ(e.steps[0].match, "ip,in_port=3,dl_src=0a:58:0a:f4:01:05,nw_src=10.244.1.5");
    EXPECT_EQ(e.steps[3].table, 22);
    EXPECT_EQ(e.steps[3].cookie, 0x6b0000000007u);
    EXPECT_EQ(e.steps[3].meaning, "allowed by NetworkPolicy x/allow-web, egress rule 0");
    EXPECT_EQ(e.steps[6].actions, (std::vector<std::string>{"set_field:172.18.0.3->tun_dst", "output:2", "-> output to native tunnel",
                                                            ">> native tunnel routing failed"}));
    ASSERT_TRUE(e.tunnelPeer);
    EXPECT_EQ(e.tunnelPeer->addressString(), "172.18.0.3");
    EXPECT_EQ(e.verdict, "sent through the tunnel to the node at 172.18.0.3");
}

TEST(PacketTrace, ADroppedPacketSaysWhy) {
    auto e = explainTrace(kDenied, node1());
    EXPECT_TRUE(e.dropped);
    EXPECT_EQ(e.steps.back().table, 22);
    EXPECT_EQ(e.verdict, "dropped: the source pod is isolated for egress and no rule allows this");
    EXPECT_FALSE(e.tunnelPeer);

    // The drop flow carries the pod's port (3, PolicyStage): the verdict
    // names the policies that isolate that pod.
    std::string numbered = kDenied;
    numbered.replace(numbered.find("cookie 0x6b06"), 13, "cookie 0x3000000006b06");
    auto in = node1();
    in.policy.isolatedEgress = {{IpPrefix::parse("10.244.1.5"), {"x/allow-web", "x/deny-all"}},
                                {IpPrefix::parse("fd00:10:244:1::5"), {"x/deny-all"}}};
    EXPECT_EQ(explainTrace(numbered, in).verdict,
              "dropped: the source pod is isolated for egress (by x/allow-web, x/deny-all) and no rule allows this");

    auto s = explainTrace(kSpoofed, node1());
    ASSERT_EQ(s.steps.size(), 1u);
    EXPECT_EQ(s.steps[0].match, "");
    EXPECT_EQ(s.verdict, "dropped: not the pod's own MAC and address (anti-spoofing)");
}

TEST(PacketTrace, DeliveryNamesThePodAndGarbageIsAnError) {
    const char* delivered = R"TRACE(bridge("br-int")
----------------
 0. in_port=2,tun_src=172.18.0.3, priority 200
    goto_table:10
41. ip,nw_dst=10.244.1.5, priority 100
    set_field:0a:58:0a:f4:01:01->eth_src
    set_field:0a:58:0a:f4:01:05->eth_dst
    output:3

Final flow: unchanged
Datapath actions: 3
)TRACE";
    auto e = explainTrace(delivered, node1());
    EXPECT_EQ(e.verdict, "delivered to pod x/a (port kovs1a2b3c4d)");
    EXPECT_EQ(e.steps[1].stage, "delivery from the tunnel");
    EXPECT_THROW(explainTrace("ovs-vswitchd: no bridge named br-int", node1()), Error);
}
