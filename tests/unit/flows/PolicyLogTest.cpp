// Policy logging in the rendered policy stage: the flows where a logged
// policy decides get a metered controller action before what they did, the
// others stay as they were, and loggedDecisions names each logging cookie.
#include <gtest/gtest.h>

#include <algorithm>

#include "flows/PolicyLog.hpp"
#include "flows/PolicyStage.hpp"

using namespace kovs::flows;
using kovs::IpPrefix;
using kovs::policy::AdminAction;
using kovs::policy::AdminCompiledRule;
using kovs::policy::CompiledPolicy;
using kovs::policy::Protocol;
using kovs::policy::Tier;

namespace {

CompiledPolicy logged() {
    CompiledPolicy p;
    // x/web allows 10.244.2.0/24 into .5 on TCP 80 (logged); x/quiet allows anything into .6 (not logged).
    p.rules.push_back({1, true, "x/web", 0, {IpPrefix::parse("10.244.1.5")}, false, {IpPrefix::parse("10.244.2.0/24")}, false,
                       {{Protocol::TCP, 80, 80}}, true});
    p.rules.push_back({2, true, "x/quiet", 1, {IpPrefix::parse("10.244.1.6")}, true, {}, true, {}, false});
    p.isolatedIngress = {{IpPrefix::parse("10.244.1.5"), {"x/web"}, true}, {IpPrefix::parse("10.244.1.6"), {"x/quiet"}, false}};
    // An ANP's Deny (logged), its Pass (never logged), the baseline's Allow (logged).
    p.adminSets = {{true, {IpPrefix::parse("10.244.1.5")}},  {false, {IpPrefix::parse("10.0.0.0/8")}}, {false, {IpPrefix::parse("11.0.0.0/8")}},
                   {false, {IpPrefix::parse("10.244.1.6")}}, {true, {IpPrefix::parse("10.96.0.10")}}};
    p.admin.push_back({3, Tier::Admin, false, AdminAction::Deny, 0, "block", "no-db", 0, 1, true, {}, true});
    p.admin.push_back({4, Tier::Admin, false, AdminAction::Pass, 1, "block", "pass", 0, 2, true, {}, false});
    p.admin.push_back({5, Tier::Baseline, true, AdminAction::Allow, 0, "default", "dns", 3, 4, true, {}, true});
    return p;
}

PolicyStageInputs inputs(PolicyLogging logging) {
    PolicyStageInputs in;
    in.gatewayOfport = 1;
    in.podPorts = {{IpPrefix::parse("10.244.1.5"), 5}, {IpPrefix::parse("10.244.1.6"), 6}};
    in.logging = logging;
    return in;
}

std::string actionsOf(const std::vector<Flow>& flows, uint64_t cookie, const std::string& match) {
    for (const auto& f : flows) {
        if (f.cookie == cookie && f.match == match) return f.actions;
    }
    return "(none)";
}

}  // namespace

TEST(PolicyLog, ControllerActionsOnlyOnTheLoggedDecisions) {
    const PolicyLogging on{107, 3};
    const auto ctl = "controller(max_len=128,userdata=00.00.00.03,meter_id=107)";
    EXPECT_EQ(controllerAction(on), ctl);
    auto flows = renderPolicyStage(logged(), inputs(on));
    EXPECT_EQ(actionsOf(flows, kCookiePolicyRule + 1, "conj_id=1"), std::string(ctl) + ",goto_table:29");
    EXPECT_EQ(actionsOf(flows, kCookiePolicyRule + 2, "ip,nw_dst=10.244.1.6"), "goto_table:29") << "not logged";
    EXPECT_EQ(actionsOf(flows, kCookiePolicyRule + 3, "conj_id=3"), ctl) << "a logged deny: the controller alone, no output";
    EXPECT_EQ(actionsOf(flows, kCookiePolicyRule + 4, "conj_id=4"), "goto_table:24") << "a Pass decides nothing";
    EXPECT_EQ(actionsOf(flows, kCookiePolicyRule + 5, "conj_id=5"), std::string(ctl) + ",goto_table:29");
    EXPECT_EQ(actionsOf(flows, policyDropCookie(true, 5), "ip,nw_dst=10.244.1.5"), ctl);
    EXPECT_EQ(actionsOf(flows, policyDropCookie(true, 6), "ip,nw_dst=10.244.1.6"), "drop");
}

TEST(PolicyLog, OffWithoutTheMeterAndTheGenerationChangesTheFlows) {
    auto off = renderPolicyStage(logged(), inputs({}));
    for (const auto& f : off) EXPECT_EQ(f.actions.find("controller"), std::string::npos) << f.text();
    auto gen3 = renderPolicyStage(logged(), inputs({107, 3}));
    auto gen4 = renderPolicyStage(logged(), inputs({107, 4}));
    ASSERT_EQ(gen3.size(), gen4.size());
    size_t differ = 0;
    for (size_t i = 0; i < gen3.size(); ++i) differ += gen3[i].actions != gen4[i].actions;
    EXPECT_EQ(differ, 4u) << "each logging flow is added again for a new vswitchd's meter, and only those";
}

TEST(PolicyLog, EachLoggingCookieNamesItsDecision) {
    const auto d = loggedDecisions(logged(), inputs({107, 1}).podPorts);
    ASSERT_EQ(d.size(), 4u);
    EXPECT_EQ(d.at(kCookiePolicyRule + 1), (LoggedDecision{"NetworkPolicy", "x/web", "0", true, true}));
    EXPECT_EQ(d.at(kCookiePolicyRule + 3), (LoggedDecision{"AdminNetworkPolicy", "block", "no-db", false, false}));
    EXPECT_EQ(d.at(kCookiePolicyRule + 5), (LoggedDecision{"BaselineAdminNetworkPolicy", "default", "dns", true, true}));
    EXPECT_EQ(d.at(policyDropCookie(true, 5)), (LoggedDecision{"NetworkPolicy", "x/web", "", true, false}));
    EXPECT_FALSE(d.count(kCookiePolicyRule + 2));
    EXPECT_FALSE(d.count(kCookiePolicyRule + 4));
}
