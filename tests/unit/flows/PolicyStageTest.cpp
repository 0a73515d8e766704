// The policy stage as text: one conjunction per compiled rule, clauses shared
// between rules, and the pipeline around it only while a policy is active.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "flows/FlowTable.hpp"
#include "flows/PolicyStage.hpp"

using namespace kovs::flows;
using kovs::IpPrefix;
using kovs::policy::CompiledPolicy;
using kovs::policy::CompiledRule;
using kovs::policy::Protocol;

namespace {

bool has(const std::vector<Flow>& flows, const std::string& line) {
    return std::any_of(flows.begin(), flows.end(), [&](const Flow& f) { return f.text() == line; });
}
std::string all(const std::vector<Flow>& flows) { return flowText(flows); }

CompiledPolicy twoRules() {
    CompiledPolicy p;
    // x/p: 10.244.1.5 from 10.244.2.0/24 on TCP 80-81; y/q: 10.244.1.5 and .6 to anything on UDP 53.
    p.rules.push_back({1, true, "x/p", 0, {IpPrefix::parse("10.244.1.5")}, false, {IpPrefix::parse("10.244.2.0/24")}, false,
                       {{Protocol::TCP, 80, 81}}});
    p.rules.push_back({2, false, "y/q", 0, {IpPrefix::parse("10.244.1.5"), IpPrefix::parse("10.244.1.6")}, true, {}, false,
                       {{Protocol::UDP, 53, 53}}});
    p.rules.push_back({3, true, "x/all", 0, {IpPrefix::parse("10.244.1.7")}, true, {}, true, {}});
    p.isolatedIngress = {{IpPrefix::parse("10.244.1.5"), {"x/p"}}, {IpPrefix::parse("10.244.1.7"), {"x/all"}}};
    p.isolatedEgress = {{IpPrefix::parse("10.244.1.5"), {"y/q"}}, {IpPrefix::parse("10.244.1.6"), {"y/q"}}};
    return p;
}

}  // namespace

TEST(PolicyStage, PortRangesBecomeTheFewestMasks) {
    EXPECT_EQ(portMasks(80, 80), std::vector<std::string>{"80"});
    EXPECT_EQ(portMasks(80, 81), std::vector<std::string>{"0x50/0xfffe"});
    EXPECT_EQ(portMasks(79, 82), (std::vector<std::string>{"79", "0x50/0xfffe", "82"}));
    EXPECT_EQ(portMasks(1, 65535).size(), 16u);
    EXPECT_EQ(portMasks(0x8000, 0xffff), std::vector<std::string>{"0x8000/0x8000"});
}

TEST(PolicyStage, OneConjunctionPerRuleWithSharedClauses) {
    PolicyStageInputs in;
    in.gatewayOfport = 1;
    in.nodeAddresses = {IpPrefix::parse("10.244.1.1")};
    in.serviceCIDRs = {IpPrefix::parse("10.96.0.0/16")};
    in.podPorts = {{IpPrefix::parse("10.244.1.5"), 5}, {IpPrefix::parse("10.244.1.6"), 6}};  // 10.244.1.7's port unknown
    auto lines = renderPolicyStage(twoRules(), in);
    const auto t = all(lines);
    // Rule 1, ingress (table 27): pods, peers, ports.
    EXPECT_TRUE(has(lines, "table=27,priority=200,ip,nw_dst=10.244.1.5 actions=conjunction(1,1/3)")) << t;
    EXPECT_TRUE(has(lines, "table=27,priority=200,ip,nw_src=10.244.2.0/24 actions=conjunction(1,2/3)")) << t;
    EXPECT_TRUE(has(lines, "table=27,priority=200,tcp,tcp_dst=0x50/0xfffe actions=conjunction(1,3/3)")) << t;
    EXPECT_TRUE(has(lines, "table=27,priority=200,cookie=0x6b0000000001,conj_id=1 actions=goto_table:29")) << t;
    // Rule 2, egress (table 24), every destination: two clauses.
    EXPECT_TRUE(has(lines, "table=24,priority=200,ip,nw_src=10.244.1.6 actions=conjunction(2,1/2)")) << t;
    EXPECT_TRUE(has(lines, "table=24,priority=200,udp,udp_dst=53 actions=conjunction(2,2/2)")) << t;
    EXPECT_TRUE(has(lines, "table=24,priority=200,cookie=0x6b0000000002,conj_id=2 actions=goto_table:26")) << t;
    // Rule 3: everything for its pods, no conjunction.
    EXPECT_TRUE(has(lines, "table=27,priority=150,cookie=0x6b0000000003,ip,nw_dst=10.244.1.7 actions=goto_table:29")) << t;
    // What no rule allows, per pod address and direction, each drop flow
    // with its pod's port in the top 16 bits of its cookie (none known: 0).
    EXPECT_TRUE(has(lines, "table=27,priority=100,cookie=0x5000000006b05,ip,nw_dst=10.244.1.5 actions=drop")) << t;
    EXPECT_TRUE(has(lines, "table=27,priority=100,cookie=0x6b05,ip,nw_dst=10.244.1.7 actions=drop")) << t;
    EXPECT_TRUE(has(lines, "table=24,priority=100,cookie=0x6000000006b06,ip,nw_src=10.244.1.6 actions=drop")) << t;
    // The node into its pods and ClusterIPs (judged after DNAT) before any
    // tier; what a tier did not decide goes on to the next.
    EXPECT_TRUE(has(lines, "table=26,priority=65000,in_port=1,ip,nw_src=10.244.1.1 actions=goto_table:29")) << t;
    EXPECT_TRUE(has(lines, "table=23,priority=65000,ip,nw_dst=10.96.0.0/16 actions=goto_table:26")) << t;
    for (const char* line : {"table=23,priority=0 actions=goto_table:24", "table=24,priority=0 actions=goto_table:25",
                             "table=25,priority=0 actions=goto_table:26", "table=26,priority=0 actions=goto_table:27",
                             "table=27,priority=0 actions=goto_table:28", "table=28,priority=0 actions=goto_table:29"})
        EXPECT_TRUE(has(lines, line)) << line << "\n" << t;
}

TEST(PolicyStage, ADropCookieNamesItsDirectionAndPodPort) {
    for (bool ingress : {true, false}) {
        for (int ofport : {1, 7, 0xfeff}) {
            auto cookie = policyDropCookie(ingress, ofport);
            EXPECT_EQ(cookie & kCookieLowBits, ingress ? kCookiePolicyIngressDrop : kCookiePolicyEgressDrop);
            auto back = policyDropOf(cookie);
            ASSERT_TRUE(back) << std::hex << cookie;
            EXPECT_EQ(back->ingress, ingress);
            EXPECT_EQ(back->ofport, ofport);
        }
    }
    // No port (the pod's is not in OVS yet): the direction's total only. Other cookies are no drop.
    EXPECT_EQ(policyDropCookie(true, 0), kCookiePolicyIngressDrop);
    EXPECT_EQ(policyDropCookie(true, -1), kCookiePolicyIngressDrop);
    EXPECT_FALSE(policyDropOf(kCookiePolicyIngressDrop));
    EXPECT_FALSE(policyDropOf(kCookiePolicyRule + 5));
    EXPECT_FALSE(policyDropOf((uint64_t(3) << 48) | 0x6b01));
}

TEST(PolicyStage, AClauseSharedByTwoRulesIsOneFlow) {
    CompiledPolicy p;
    p.rules.push_back({1, true, "x/p", 0, {IpPrefix::parse("10.244.1.5")}, false, {IpPrefix::parse("10.244.2.7")}, true, {}});
    p.rules.push_back({2, true, "x/q", 0, {IpPrefix::parse("10.244.1.5")}, true, {}, false, {{Protocol::SCTP, 0, 0}}});
    p.isolatedIngress = {{IpPrefix::parse("10.244.1.5"), {"x/p", "x/q"}}};
    p.rules[0].appliedTo.push_back(IpPrefix::parse("fd00:10:244:1::5"));
    p.rules[1].appliedTo.push_back(IpPrefix::parse("fd00:10:244:1::5"));
    auto lines = renderPolicyStage(p, {});
    const auto t = all(lines);
    EXPECT_TRUE(has(lines, "table=27,priority=200,ip,nw_dst=10.244.1.5 actions=conjunction(1,1/2),conjunction(2,1/2)")) << t;
    EXPECT_TRUE(has(lines, "table=27,priority=200,ipv6,ipv6_dst=fd00:10:244:1::5 actions=conjunction(1,1/2),conjunction(2,1/2)")) << t;
    EXPECT_TRUE(has(lines, "table=27,priority=200,sctp actions=conjunction(2,2/2)")) << t;
    EXPECT_TRUE(has(lines, "table=27,priority=200,sctp6 actions=conjunction(2,2/2)")) << t;
}

TEST(PolicyStage, TheTableHasAStageOnlyWhileAPolicySelectsALocalPod) {
    FlowInputs in;
    in.tunnelOfport = 2;
    in.gateway = {"aa:bb:cc:00:00:01", 1};
    in.gatewayAddresses = {IpPrefix::parse("10.244.1.1/24")};
    in.pods = {{"pod1", "0a:58:0a:f4:01:05", {"10.244.1.5/24"}, 7}};
    auto plain = FlowTable::render(in).text();
    EXPECT_EQ(plain.find("table=21"), std::string::npos) << plain;
    EXPECT_NE(plain.find("table=20,priority=200,ct_state=+new+trk,in_port=1,ip"), std::string::npos) << plain;

    in.policy = twoRules();
    auto t = FlowTable::render(in).text();
    EXPECT_NE(t.find("table=10,priority=80,ip actions=ct(table=20,zone=107)\n"), std::string::npos) << "every IP packet: " << t;
    EXPECT_NE(t.find("table=20,priority=185,ct_state=+est+trk actions=goto_table:30\n"), std::string::npos) << t;
    EXPECT_NE(t.find("table=20,priority=0 actions=goto_table:21\n"), std::string::npos) << t;
    EXPECT_NE(t.find("table=29,priority=200,ct_state=+new+trk,in_port=1,ip actions=ct(commit,zone=107,exec(set_field:0x1/0x1->ct_mark)),goto_table:30\n"),
              std::string::npos) << t;
    EXPECT_NE(t.find("table=29,priority=100,ct_state=+new+trk,ip actions=ct(commit,zone=107),goto_table:30\n"), std::string::npos) << t;
    EXPECT_EQ(t.find("table=20,priority=200"), std::string::npos) << "the commit moved after the policy: " << t;
    EXPECT_NE(t.find("table=26,priority=65000,in_port=1,ip,nw_src=10.244.1.1 actions=goto_table:29\n"), std::string::npos) << t;
}

// A forged inner source from a known peer is dropped by table 40; with a
// policy stage it must not be committed first either, or a pod's packets to
// that source would pass as replies, unjudged.
TEST(PolicyStage, FromTheTunnelOnlyBoundSourcesAreCommitted) {
    FlowInputs in;
    in.tunnelOfport = 2;
    in.gateway = {"aa:bb:cc:00:00:01", 1};
    in.gatewayAddresses = {IpPrefix::parse("10.244.1.1/24")};
    in.peers = {{IpPrefix::parse("172.18.0.3"), {IpPrefix::parse("10.244.2.0/24")}, {IpPrefix::parse("172.18.0.3")}}};
    in.policy = twoRules();
    auto t = FlowTable::render(in).text();
    EXPECT_NE(t.find("table=29,priority=150,ct_state=+new+trk,in_port=2,tun_src=172.18.0.3,ip,nw_src=10.244.2.0/24 "
                     "actions=ct(commit,zone=107),goto_table:30\n"), std::string::npos) << t;
    EXPECT_NE(t.find("table=29,priority=150,ct_state=+new+trk,in_port=2,tun_src=172.18.0.3,ip,nw_src=172.18.0.3 "
                     "actions=ct(commit,zone=107),goto_table:30\n"), std::string::npos) << t;
    EXPECT_NE(t.find("table=29,priority=140,ct_state=+new+trk,in_port=2 actions=goto_table:30\n"), std::string::npos) << t;
}

namespace {
// Ingress to 10.244.1.5: deny from 10.244.2.0/24 (any port), before allow
// from 10.244.2.7 on TCP 80. An address inside a set's network is in it.
CompiledPolicy adminRules() {
    using namespace kovs::policy;
    CompiledPolicy p;
    p.adminSets = {{false, {IpPrefix::parse("10.244.1.5")}}, {true, {IpPrefix::parse("10.244.2.0/24")}}, {true, {IpPrefix::parse("10.244.2.7")}}};
    p.admin.push_back({adminRuleId(Tier::Admin, true, 0, 0), Tier::Admin, true, AdminAction::Deny, 0, "deny", "r", 0, 1, true, {}});
    p.admin.push_back({adminRuleId(Tier::Admin, true, 1, 0), Tier::Admin, true, AdminAction::Allow, 1, "allow", "r", 0, 2, false,
                       {{Protocol::TCP, 80, 80}}});
    return p;
}
}  // namespace

// The admin rules' subjects and peers are their sets' register bits, one
// flow each; an address is classified once, with the bits of every set
// holding it (a network's too).
TEST(PolicyStage, AdminRulesMatchTheirAddressSetsBits) {
    const auto p = adminRules();
    const auto deny = p.admin[0].id, allow = p.admin[1].id;
    auto lines = renderPolicyStage(p, {});
    auto t = all(lines);
    EXPECT_TRUE(has(lines, "table=21,priority=124,ip,nw_src=10.244.2.0/24 actions=load:0x1->NXM_NX_REG1[],goto_table:22")) << t;
    EXPECT_TRUE(has(lines, "table=21,priority=132,ip,nw_src=10.244.2.7 actions=load:0x3->NXM_NX_REG1[],goto_table:22")) << t;
    EXPECT_TRUE(has(lines, "table=21,priority=0 actions=goto_table:22")) << t;
    EXPECT_TRUE(has(lines, "table=22,priority=132,ip,nw_dst=10.244.1.5 actions=load:0x1->NXM_NX_REG8[],goto_table:23")) << t;
    EXPECT_TRUE(has(lines, "table=22,priority=0 actions=goto_table:23")) << t;
    EXPECT_TRUE(has(lines, fmt::format("table=26,priority=64000,reg8=0x1/0x1 actions=conjunction({},1/2)", deny))) << t;
    EXPECT_TRUE(has(lines, fmt::format("table=26,priority=64000,reg1=0x1/0x1 actions=conjunction({},2/2)", deny))) << t;
    EXPECT_TRUE(has(lines, fmt::format("table=26,priority=64000,cookie={:#x},conj_id={} actions=drop", kCookiePolicyRule + deny, deny))) << t;
    EXPECT_TRUE(has(lines, fmt::format("table=26,priority=63999,reg1=0x2/0x2 actions=conjunction({},2/3)", allow))) << t;
    EXPECT_TRUE(has(lines, fmt::format("table=26,priority=63999,tcp,tcp_dst=80 actions=conjunction({},3/3)", allow))) << t;
    EXPECT_TRUE(has(lines, fmt::format("table=26,priority=63999,cookie={:#x},conj_id={} actions=goto_table:29", kCookiePolicyRule + allow, allow)))
        << t;
    EXPECT_EQ(t.find("nw_src=10.244.2.0/24 actions=conj"), std::string::npos) << "no rule matches addresses itself: " << t;
}

// Sets past the registers' bits are matched by their addresses, as clauses.
TEST(PolicyStage, AdminSetsWithoutABitMatchTheirAddresses) {
    const auto p = adminRules();
    PolicyStageInputs in;
    in.adminSetBits = 1;  // the first set of each side: 10.244.1.5 and 10.244.2.0/24
    auto lines = renderPolicyStage(p, in);
    auto t = all(lines);
    const auto allow = p.admin[1].id;
    EXPECT_TRUE(has(lines, fmt::format("table=26,priority=63999,ip,nw_src=10.244.2.7 actions=conjunction({},2/3)", allow))) << t;
    EXPECT_TRUE(has(lines, fmt::format("table=26,priority=63999,reg8=0x1/0x1 actions=conjunction({},1/3)", allow))) << t;
    EXPECT_TRUE(has(lines, "table=21,priority=124,ip,nw_src=10.244.2.0/24 actions=load:0x1->NXM_NX_REG1[],goto_table:22")) << t;
    EXPECT_EQ(t.find("table=21,priority=132"), std::string::npos) << "10.244.2.7's set has no bit: the /24 classifies it: " << t;
    EXPECT_EQ(matchBit(Reg::SourceSets, 33), "reg2=0x2/0x2");
    EXPECT_EQ(loadRegister(Reg::DestinationSets, 6, 0x80000000u), "load:0x80000000->NXM_NX_REG14[]");
}
