// kovs.dev/log on NetworkPolicies and the admin tiers: decoded through the
// informers' field filter, compiled onto the rules it logs, and bad values
// named and ignored (never a change to what is enforced).
#include <gtest/gtest.h>

#include "kube/ApiPayload.hpp"
#include "policy/AdminPolicyModel.hpp"
#include "policy/PolicyCompiler.hpp"
#include "policy/PolicyModel.hpp"

using namespace kovs::policy;
using nlohmann::json;

namespace {

json npObject(const std::string& log, json logValue = nullptr) {
    json o = {{"metadata", {{"namespace", "x"}, {"name", "p"}, {"annotations", json::object()}}},
              {"spec", {{"podSelector", json::object()}, {"ingress", {{{"from", {{{"podSelector", json::object()}}}}}}}}}};
    if (!log.empty()) o["metadata"]["annotations"][kLogAnnotation] = log;
    if (!logValue.is_null()) o["metadata"]["annotations"][kLogAnnotation] = logValue;
    return o;
}

}  // namespace

TEST(PolicyLogMode, TheAnnotationsValues) {
    for (auto [text, mode] : {std::pair{"deny", LogMode::Deny}, {"allow", LogMode::Allow}, {"all", LogMode::All}, {"none", LogMode::None}}) {
        auto np = decodeNetworkPolicy(npObject(text));
        EXPECT_EQ(np.log, mode) << text;
        EXPECT_TRUE(np.warnings.empty()) << text;
    }
    EXPECT_EQ(decodeNetworkPolicy(npObject("")).log, LogMode::None);
    EXPECT_TRUE(logs(LogMode::All, true) && logs(LogMode::All, false));
    EXPECT_TRUE(logs(LogMode::Deny, false) && !logs(LogMode::Deny, true));
    EXPECT_TRUE(logs(LogMode::Allow, true) && !logs(LogMode::Allow, false));
}

TEST(PolicyLogMode, AnUnknownValueIsNamedAndLogsNothingAndTheRulesStay) {
    auto good = decodeNetworkPolicy(npObject(""));
    for (const json& bad : {json("Deny"), json("yes"), json(true), json::array({"deny"})}) {
        auto np = decodeNetworkPolicy(npObject("", bad));
        EXPECT_EQ(np.log, LogMode::None) << bad;
        ASSERT_EQ(np.warnings.size(), 1u) << bad;
        EXPECT_NE(np.warnings[0].find("NetworkPolicy x/p: annotation kovs.dev/log: '"), std::string::npos) << np.warnings[0];
        EXPECT_EQ(np.ingressRules, good.ingressRules) << "enforced as written";
    }
    json anp = {{"metadata", {{"name", "a"}, {"annotations", {{kLogAnnotation, "everything"}}}}},
                {"spec", {{"priority", 5}, {"subject", {{"namespaces", json::object()}}}, {"ingress", json::array()}}}};
    auto a = decodeAdminNetworkPolicy(anp);
    EXPECT_EQ(a.log, LogMode::None);
    ASSERT_EQ(a.warnings.size(), 1u);
    EXPECT_NE(a.warnings[0].find("AdminNetworkPolicy a: annotation kovs.dev/log: 'everything'"), std::string::npos) << a.warnings[0];
}

TEST(PolicyLogMode, TheInformersFieldFilterKeepsItAndDropsOtherAnnotations) {
    json list = {{"kind", "NetworkPolicyList"},
                 {"metadata", {{"resourceVersion", "7"}}},
                 {"items", {npObject("deny")}}};
    list["items"][0]["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = std::string(1000, 'x');
    auto parsed = kovs::kube::parseListPayload(list.dump(), networkPolicyFields());
    ASSERT_EQ(parsed.items.size(), 1u);
    const auto& annotations = parsed.items[0]["metadata"]["annotations"];
    EXPECT_EQ(annotations.size(), 1u) << annotations;
    EXPECT_EQ(decodeNetworkPolicy(parsed.items[0]).log, LogMode::Deny);
    auto anps = kovs::kube::parseListPayload(list.dump(), adminPolicyFields());
    EXPECT_EQ(anps.items[0]["metadata"]["annotations"].size(), 1u);
}

TEST(PolicyLogMode, CompiledOntoTheRulesAndIsolationsItLogs) {
    PolicyCluster c;
    c.namespaces["x"] = {"x", {}};
    PolicyPod a{"x", "a", "node1", {}, {kovs::IpPrefix::parse("10.244.1.5")}, false, {}};
    PolicyPod b{"x", "b", "node1", {}, {kovs::IpPrefix::parse("10.244.1.6")}, false, {}};
    c.pods[a.key()] = a;
    c.pods[b.key()] = b;
    auto deny = decodeNetworkPolicy(npObject("deny"));
    c.policies[deny.key()] = deny;
    auto compiled = compilePolicy(c, "node1");
    ASSERT_FALSE(compiled.rules.empty());
    for (const auto& r : compiled.rules) EXPECT_FALSE(r.log) << "deny logs no allowing rule";
    ASSERT_EQ(compiled.isolatedIngress.size(), 2u);
    for (const auto& i : compiled.isolatedIngress) EXPECT_TRUE(i.log);
    auto all = decodeNetworkPolicy(npObject("all"));
    c.policies[all.key()] = all;
    compiled = compilePolicy(c, "node1");
    for (const auto& r : compiled.rules) EXPECT_TRUE(r.log);
    // A second, unlogged policy isolating the same pods keeps their drops logged.
    auto quiet = decodeNetworkPolicy(npObject(""));
    quiet.name = "q";
    c.policies[quiet.key()] = quiet;
    compiled = compilePolicy(c, "node1");
    for (const auto& i : compiled.isolatedIngress) {
        EXPECT_TRUE(i.log);
        EXPECT_EQ(i.policies, (std::vector<std::string>{"x/p", "x/q"}));
    }
}
