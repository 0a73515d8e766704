// AdminNetworkPolicy and BaselineAdminNetworkPolicy: the decoders (what is
// refused whole, what only loses a rule) and the tiers' order in the
// evaluator, in cases shaped like sig-network's policy-api conformance suite
// (priority order, Pass to NetworkPolicy and to the baseline, an ANP Deny over
// a NetworkPolicy Allow, a baseline Deny under a NetworkPolicy Allow, named
// ports, port ranges, namespace and pod subjects, egress to networks and
// nodes), on the upstream NetworkPolicy suite's cluster (namespaces x, y, z,
// pods a, b, c; tests/support/PolicyCluster.hpp).
#include <gtest/gtest.h>

#include <stdexcept>

#include "base/Error.hpp"
#include "policy/AdminPolicyModel.hpp"
#include "policy/PolicyCompiler.hpp"
#include "policy/PolicyEvaluator.hpp"
#include "tests/support/AdminPolicyCases.hpp"
#include "tests/support/PolicyCluster.hpp"

using namespace kovs::policy;
using kovs::IpPrefix;
using kovs::test::netpolCluster;
using kovs::test::policyObject;
using nlohmann::json;

namespace {

json anp(const std::string& name, int priority, const std::string& spec) { return kovs::test::adminPolicyObject(name, priority, spec); }
json banp(const std::string& spec, const std::string& name = "default") { return kovs::test::baselinePolicyObject(spec, name); }

// Subject: the pods of namespace x; one ingress rule from namespace `from`.
std::string ingressFrom(const std::string& action, const std::string& from, const std::string& ports = "") {
    return R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}}, "ingress": [{"name": ")" + action + "-from-" + from +
           R"(", "action": ")" + action + R"(", "from": [{"namespaces": {"matchLabels": {"ns": ")" + from + R"("}}}])" +
           (ports.empty() ? "" : R"(, "ports": )" + ports) + "}]}";
}

struct Cluster {
    PolicyCluster c;
    AdminTiers t;
    explicit Cluster(const std::vector<json>& policies = {}) : c(netpolCluster(policies)) {}
    Cluster& with(const json& anpObject) {
        auto p = decodeAdminNetworkPolicy(anpObject);
        t.admin[p.name] = p;
        return *this;
    }
    Cluster& baseline(const json& banpObject) {
        t.baseline = decodeBaselineAdminNetworkPolicy(banpObject);
        return *this;
    }
    Endpoint pod(const std::string& key) const {
        const auto& p = c.pods.at(key);
        return {key, p.ips.at(0), p.nodeName};
    }
    Decision tcp(const std::string& from, const std::string& to, int port = 80) const {
        return decide(c, t, pod(from), pod(to), Protocol::TCP, port);
    }
};

std::string refused(const json& object, bool baseline = false) {
    try {
        baseline ? decodeBaselineAdminNetworkPolicy(object) : decodeAdminNetworkPolicy(object);
    } catch (const kovs::Error& e) {
        return e.what();
    }
    return "accepted";
}

}  // namespace

TEST(AdminPolicyDecode, TheApisShapesDecode) {
    auto p = decodeAdminNetworkPolicy(anp("a", 5, R"({
        "subject": {"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "a"}}}},
        "ingress": [{"name": "r1", "action": "Pass", "from": [{"pods": {"namespaceSelector": {}, "podSelector": {}}}],
                     "ports": [{"portNumber": {"protocol": "UDP", "port": 53}}, {"namedPort": "dns"},
                               {"portRange": {"protocol": "TCP", "start": 8000, "end": 8080}}]}],
        "egress": [{"name": "r2", "action": "Deny", "to": [{"networks": ["192.0.2.7/24"]}, {"nodes": {"matchLabels": {"k": "v"}}}]}]})"));
    EXPECT_EQ(p.priority, 5);
    ASSERT_TRUE(p.subject.pods);
    ASSERT_EQ(p.ingress.size(), 1u);
    EXPECT_EQ(p.ingress[0].action, AdminAction::Pass);
    ASSERT_EQ(p.ingress[0].ports.size(), 3u);
    EXPECT_EQ(p.ingress[0].ports[0], (AdminPort{Protocol::UDP, 53, 53, ""}));
    EXPECT_EQ(p.ingress[0].ports[1].named, "dns");
    EXPECT_EQ(p.ingress[0].ports[2], (AdminPort{Protocol::TCP, 8000, 8080, ""}));
    ASSERT_EQ(p.egress.size(), 1u);
    EXPECT_EQ(p.egress[0].peers[0].networks, std::vector<IpPrefix>{IpPrefix::parse("192.0.2.0/24")});
    EXPECT_EQ(p.egress[0].peers[1].kind, AdminPeer::Kind::Nodes);
    EXPECT_TRUE(p.warnings.empty());
}

TEST(AdminPolicyDecode, WhatCannotBeKnownRefusesThePolicyWhole) {
    EXPECT_NE(refused(anp("a", 1001, ingressFrom("Deny", "y"))).find("spec.priority: not an integer 0-1000"), std::string::npos);
    EXPECT_NE(refused(anp("a", -1, ingressFrom("Deny", "y"))).find("spec.priority"), std::string::npos);
    auto noPriority = anp("a", 0, ingressFrom("Deny", "y"));
    noPriority["spec"].erase("priority");
    EXPECT_NE(refused(noPriority).find("spec.priority"), std::string::npos);
    auto bothSubjects = anp("a", 1, R"({"subject": {"namespaces": {}, "pods": {"namespaceSelector": {}, "podSelector": {}}}})");
    EXPECT_NE(refused(bothSubjects).find("both namespaces and pods"), std::string::npos) << refused(bothSubjects);
    EXPECT_NE(refused(anp("a", 1, R"({"subject": {}})")).find("subject: empty"), std::string::npos);
    EXPECT_NE(refused(anp("a", 1, R"({"subject": {"nodes": {}}})")).find("is not namespaces or pods"), std::string::npos);
    EXPECT_NE(refused(banp(R"({"subject": {"namespaces": {}}})", "other"), true).find("named \"default\""), std::string::npos);
}

TEST(AdminPolicyDecode, ARuleThatCannotBeReadIsLeftOutAndNamed) {
    auto p = decodeAdminNetworkPolicy(anp("a", 1, R"({"subject": {"namespaces": {}},
        "ingress": [{"name": "bad-action", "action": "Log", "from": [{"namespaces": {}}]},
                    {"name": "nodes-in-ingress", "action": "Deny", "from": [{"nodes": {}}]},
                    {"name": "no-peer", "action": "Deny", "from": []},
                    {"name": "bad-port", "action": "Deny", "from": [{"namespaces": {}}], "ports": [{"portNumber": {"port": 70000}}]},
                    {"name": "sctp-range", "action": "Deny", "from": [{"namespaces": {}}],
                     "ports": [{"portRange": {"protocol": "SCTP", "start": 90, "end": 80}}]},
                    {"name": "good", "action": "Deny", "from": [{"namespaces": {}}]}]})"));
    ASSERT_EQ(p.ingress.size(), 1u);
    EXPECT_EQ(p.ingress[0].name, "good");
    ASSERT_EQ(p.warnings.size(), 5u);
    EXPECT_NE(p.warnings[0].find("action 'Log' is not Allow, Deny or Pass: the rule is left out"), std::string::npos) << p.warnings[0];
    EXPECT_NE(p.warnings[1].find("peer type 'nodes' is not supported in ingress"), std::string::npos) << p.warnings[1];
    EXPECT_NE(p.warnings[2].find("from: empty"), std::string::npos) << p.warnings[2];
    EXPECT_NE(p.warnings[3].find("portNumber.port: not a port number"), std::string::npos) << p.warnings[3];
    EXPECT_NE(p.warnings[4].find("end is below start"), std::string::npos) << p.warnings[4];
    // The baseline has no Pass.
    auto b = decodeBaselineAdminNetworkPolicy(banp(R"({"subject": {"namespaces": {}},
        "egress": [{"name": "p", "action": "Pass", "to": [{"namespaces": {}}]}]})"));
    EXPECT_TRUE(b.egress.empty());
    ASSERT_EQ(b.warnings.size(), 1u);
    EXPECT_NE(b.warnings[0].find("is not Allow or Deny"), std::string::npos) << b.warnings[0];
}

TEST(AdminPolicyTiers, TheLowerPriorityDecidesFirst) {
    Cluster k;
    k.with(anp("deny-y", 10, ingressFrom("Deny", "y"))).with(anp("allow-y", 20, ingressFrom("Allow", "y")));
    auto d = k.tcp("y/a", "x/a");
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.tier, "AdminNetworkPolicy");
    EXPECT_EQ(d.policy, "deny-y");
    EXPECT_EQ(d.rule, "Deny-from-y");
    EXPECT_TRUE(d.ingress);
    k.t.admin["allow-y"].priority = 5;
    EXPECT_TRUE(k.tcp("y/a", "x/a").allowed);
    EXPECT_TRUE(k.tcp("z/a", "x/a").allowed) << "no rule matches z";
    EXPECT_EQ(k.tcp("z/a", "x/a").tier, "");
}

TEST(AdminPolicyTiers, AnAnpDenyOverridesANetworkPolicyAllowAndAnAllowOverridesItsDeny) {
    Cluster k(std::vector<json>{policyObject("x", "from-y", json::parse(R"({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}}]}]})"))});
    EXPECT_TRUE(k.tcp("y/a", "x/a").allowed);
    EXPECT_FALSE(k.tcp("z/a", "x/a").allowed) << "the NetworkPolicy isolates x";
    k.with(anp("deny-y", 1, ingressFrom("Deny", "y"))).with(anp("allow-z", 2, ingressFrom("Allow", "z")));
    EXPECT_FALSE(k.tcp("y/a", "x/a").allowed);
    auto z = k.tcp("z/a", "x/a");
    EXPECT_TRUE(z.allowed);
    EXPECT_EQ(z.policy, "allow-z");
}

TEST(AdminPolicyTiers, PassHandsTheConnectionToNetworkPolicyAndThenToTheBaseline) {
    Cluster k(std::vector<json>{policyObject("x", "from-z", json::parse(R"({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "z"}}}]}]})"))});
    // Pass y at priority 1 skips the Allow of y at 2: the NetworkPolicy (from z only) decides.
    k.with(anp("pass-y", 1, ingressFrom("Pass", "y"))).with(anp("allow-y", 2, ingressFrom("Allow", "y")));
    auto y = k.tcp("y/a", "x/a");
    EXPECT_FALSE(y.allowed);
    EXPECT_EQ(y.tier, "NetworkPolicy");
    EXPECT_EQ(y.policy, "x/from-z");
    // Without a NetworkPolicy the baseline decides what was passed.
    Cluster b;
    b.with(anp("pass-y", 1, ingressFrom("Pass", "y"))).with(anp("allow-y", 2, ingressFrom("Allow", "y")));
    b.baseline(banp(ingressFrom("Deny", "y")));
    auto d = b.tcp("y/a", "x/a");
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.tier, "BaselineAdminNetworkPolicy");
    EXPECT_EQ(d.policy, "default");
    EXPECT_TRUE(b.tcp("z/a", "x/a").allowed);
}

TEST(AdminPolicyTiers, ABaselineDenyYieldsToANetworkPolicyAllow) {
    Cluster k(std::vector<json>{policyObject("x", "from-y", json::parse(R"({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}}]}]})"))});
    k.baseline(banp(ingressFrom("Deny", "y")));
    EXPECT_TRUE(k.tcp("y/a", "x/a").allowed) << "x/a is isolated by a NetworkPolicy that allows y";
    auto b = k.tcp("y/a", "x/b");
    EXPECT_FALSE(b.allowed) << "x/b is selected by no NetworkPolicy: the baseline decides";
    EXPECT_EQ(b.tier, "BaselineAdminNetworkPolicy");
}

TEST(AdminPolicyTiers, NamedPortsAndPortRanges) {
    Cluster k;
    k.with(anp("deny-range", 1, ingressFrom("Deny", "y", R"([{"portRange": {"protocol": "TCP", "start": 79, "end": 80}}])")));
    k.with(anp("deny-named", 2, ingressFrom("Deny", "z", R"([{"namedPort": "serve-81-udp"}])")));
    EXPECT_FALSE(k.tcp("y/a", "x/a", 80).allowed);
    EXPECT_TRUE(k.tcp("y/a", "x/a", 81).allowed);
    EXPECT_TRUE(decide(k.c, k.t, k.pod("y/a"), k.pod("x/a"), Protocol::UDP, 80).allowed) << "the range is TCP's";
    EXPECT_FALSE(decide(k.c, k.t, k.pod("z/a"), k.pod("x/a"), Protocol::UDP, 81).allowed);
    EXPECT_TRUE(k.tcp("z/a", "x/a", 81).allowed) << "serve-81-udp is UDP";
}

TEST(AdminPolicyTiers, NamespaceAndPodSubjects) {
    Cluster k;
    k.with(anp("deny-to-b", 1, R"({"subject": {"pods": {"namespaceSelector": {"matchLabels": {"ns": "x"}}, "podSelector": {"matchLabels": {"pod": "b"}}}},
        "ingress": [{"name": "all", "action": "Deny", "from": [{"namespaces": {}}]}]})"));
    EXPECT_FALSE(k.tcp("y/a", "x/b").allowed);
    EXPECT_FALSE(k.tcp("x/a", "x/b").allowed);
    EXPECT_TRUE(k.tcp("y/a", "x/a").allowed) << "x/a is not the subject";
    EXPECT_TRUE(k.tcp("x/a", "y/b").allowed) << "y/b is not the subject";
}

TEST(AdminPolicyTiers, EgressToNetworksAndNodes) {
    Cluster k;
    k.t.nodes["n1"].labels = Labels{{"role", "infra"}};
    k.with(anp("egress", 1, R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}},
        "egress": [{"name": "no-infra-nodes", "action": "Deny", "to": [{"nodes": {"matchLabels": {"role": "infra"}}}]},
                   {"name": "no-docs", "action": "Deny", "to": [{"networks": ["192.0.2.0/24"]}]}]})"));
    const Endpoint n1{std::nullopt, IpPrefix::parse("172.18.0.2"), "n1"}, n2{std::nullopt, IpPrefix::parse("172.18.0.3"), "n2"};
    const Endpoint docs{std::nullopt, IpPrefix::parse("192.0.2.9"), ""}, world{std::nullopt, IpPrefix::parse("198.51.100.1"), ""};
    auto d = decide(k.c, k.t, k.pod("x/a"), n1, Protocol::TCP, 10250);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.rule, "no-infra-nodes");
    EXPECT_FALSE(d.ingress);
    EXPECT_TRUE(decide(k.c, k.t, k.pod("x/a"), n2, Protocol::TCP, 10250).allowed);
    EXPECT_FALSE(decide(k.c, k.t, k.pod("x/a"), docs, Protocol::UDP, 53).allowed);
    EXPECT_TRUE(decide(k.c, k.t, k.pod("x/a"), world, Protocol::UDP, 53).allowed);
    EXPECT_TRUE(decide(k.c, k.t, k.pod("y/a"), docs, Protocol::UDP, 53).allowed) << "y is not the subject";
}

TEST(AdminPolicyTiers, OnePriorityTwiceIsTakenByNameAndReported) {
    Cluster k;
    k.with(anp("b-allow", 7, ingressFrom("Allow", "y"))).with(anp("a-deny", 7, ingressFrom("Deny", "y"))).with(anp("c", 8, ingressFrom("Allow", "y")));
    EXPECT_EQ(k.tcp("y/a", "x/a").policy, "a-deny");
    EXPECT_EQ(samePriority(k.t.admin), (std::vector<std::vector<std::string>>{{"a-deny", "b-allow"}}));
}

// --- compiled for a node: where rules decide, and the address sets ---

namespace {
const AdminCompiledRule& ruleNamed(const CompiledPolicy& p, const std::string& policy) {
    for (const auto& r : p.admin) {
        if (r.policy == policy) return r;
    }
    throw std::runtime_error("no compiled rule of " + policy);
}
}  // namespace

// An ANP's rules start at its priority's band: adding one at another
// priority, or a NetworkPolicy rule, moves no other rule and changes no id
// (so the flows of the others stay as they are).
TEST(AdminPolicyCompile, ARuleKeepsItsPlaceAndIdWhenOthersComeAndGo) {
    Cluster k;
    k.with(anp("deny-y", 10, ingressFrom("Deny", "y"))).with(anp("allow-z", 20, ingressFrom("Allow", "z")));
    const auto before = compilePolicy(k.c, "n1", k.t);
    EXPECT_EQ(ruleNamed(before, "deny-y").precedence, 10 * kAdminBand);
    EXPECT_EQ(ruleNamed(before, "allow-z").precedence, 20 * kAdminBand);
    k.with(anp("pass-x", 15, ingressFrom("Pass", "x")));
    k.c = netpolCluster({policyObject("x", "from-y", json::parse(R"({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}}]}]})"))});
    const auto after = compilePolicy(k.c, "n1", k.t);
    ASSERT_FALSE(after.rules.empty());
    EXPECT_EQ(ruleNamed(after, "allow-z").precedence, ruleNamed(before, "allow-z").precedence);
    EXPECT_EQ(ruleNamed(after, "allow-z").id, ruleNamed(before, "allow-z").id);
    EXPECT_EQ(ruleNamed(after, "pass-x").precedence, 15 * kAdminBand);
    for (const auto& r : after.admin) EXPECT_GT(r.id, after.rules.back().id) << "admin ids are above every NetworkPolicy rule's";
}

// Two ANPs at one priority share its band, by name; one with more rules
// than a band runs into the next, and the next ANP starts after it.
TEST(AdminPolicyCompile, APriorityShareAndAnOverflowKeepTheOrder) {
    Cluster k;
    std::string rules;
    for (int i = 0; i <= kAdminBand; ++i) {
        rules += std::string(i ? "," : "") + R"({"name": "r)" + std::to_string(i) + R"(", "action": "Deny", "from": [{"namespaces": {}}]})";
    }
    k.with(anp("a-big", 3, R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}}, "ingress": [)" + rules + "]}"));
    k.with(anp("a-next", 4, ingressFrom("Allow", "y"))).with(anp("b-same", 3, ingressFrom("Allow", "z")));
    const auto p = compilePolicy(k.c, "n1", k.t);
    EXPECT_EQ(ruleNamed(p, "a-big").precedence, 3 * kAdminBand);
    EXPECT_EQ(ruleNamed(p, "b-same").precedence, 3 * kAdminBand + kAdminBand + 1) << "after a-big's 61 rules, by name";
    EXPECT_EQ(ruleNamed(p, "a-next").precedence, 3 * kAdminBand + kAdminBand + 2) << "pushed past its band's start";
}

// Rules naming the same addresses share one set; a subject set and a peer
// set are kept apart by the side of the packet they are matched on.
TEST(AdminPolicyCompile, RulesNamingTheSameAddressesShareASet) {
    Cluster k;
    k.with(anp("deny-y", 1, ingressFrom("Deny", "y"))).with(anp("allow-y", 2, ingressFrom("Allow", "y", R"([{"portNumber": {"protocol": "TCP", "port": 80}}])")));
    const auto p = compilePolicy(k.c, "n1", k.t);
    const auto& d = ruleNamed(p, "deny-y");
    const auto& a = ruleNamed(p, "allow-y");
    EXPECT_EQ(d.peers, a.peers);
    EXPECT_EQ(d.subjects, a.subjects);
    EXPECT_NE(d.peers, d.subjects);
    EXPECT_TRUE(p.adminSets[d.peers].source) << "ingress peers are sources";
    EXPECT_FALSE(p.adminSets[d.subjects].source);
    EXPECT_EQ(p.adminSets.size(), 2u);
    for (const auto& ip : p.adminSets[d.peers].addresses) EXPECT_EQ(ip.str().rfind("10.244.", 0), 0u) << ip.str();
}
