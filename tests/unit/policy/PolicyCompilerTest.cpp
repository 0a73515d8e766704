// What the compiler makes of policies for one node: one rule per policy rule
// (and per named-port resolution), sets rather than products.
#include <gtest/gtest.h>

#include "policy/PolicyCompiler.hpp"
#include "tests/support/PolicyCluster.hpp"

using namespace kovs::policy;
using kovs::IpPrefix;
using kovs::test::netpolCluster;
using kovs::test::policyObject;
using nlohmann::json;

namespace {
std::vector<IpPrefix> ips(std::initializer_list<const char*> list) {
    std::vector<IpPrefix> out;
    for (const auto* s : list) out.push_back(IpPrefix::parse(s));
    return out;
}
std::vector<IpPrefix> addressesOf(const std::vector<Isolation>& isolated) {
    std::vector<IpPrefix> out;
    for (const auto& i : isolated) out.push_back(i.address);
    return out;
}
}  // namespace

TEST(PolicyCompiler, NoPolicyOrNoLocalPodSelectedIsInactive) {
    EXPECT_FALSE(compilePolicy(netpolCluster({}), "n1").active());
    // x/b is n2's: nothing for n1 to do.
    auto c = netpolCluster({policyObject("x", "p", {{"podSelector", {{"matchLabels", {{"pod", "b"}}}}}})});
    EXPECT_FALSE(compilePolicy(c, "n1").active());
    auto n2 = compilePolicy(c, "n2");
    EXPECT_EQ(n2.isolatedIngress, (std::vector<Isolation>{{IpPrefix::parse("10.244.2.11"), {"x/p"}}}));
    EXPECT_TRUE(n2.isolatedEgress.empty());
    EXPECT_TRUE(n2.rules.empty());
}

TEST(PolicyCompiler, ARuleIsItsPodsItsPeersAndItsPorts) {
    auto c = netpolCluster({policyObject(
        "x", "p", json::parse(R"({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}}],
                                   "ports": [{"port": 80, "endPort": 81}, {"protocol": "UDP", "port": 80}]}]})"))});
    auto n1 = compilePolicy(c, "n1");
    ASSERT_EQ(n1.rules.size(), 1u);
    const auto& r = n1.rules[0];
    EXPECT_EQ(r.id, 1u);
    EXPECT_EQ(r.policy, "x/p");
    EXPECT_TRUE(r.ingress);
    EXPECT_EQ(r.appliedTo, ips({"10.244.1.10", "10.244.1.12"})) << "x/a and x/c run on n1";
    EXPECT_EQ(r.peers, ips({"10.244.1.14", "10.244.2.13", "10.244.2.15"})) << "every pod of y, on any node";
    EXPECT_EQ(r.ports, (std::vector<PortMatch>{{Protocol::TCP, 80, 81}, {Protocol::UDP, 80, 80}}));
    EXPECT_EQ(addressesOf(n1.isolatedIngress), r.appliedTo);
}

TEST(PolicyCompiler, NamedPortsResolvePerPodAndGroupAlike) {
    std::vector<json> objects{policyObject("x", "p", json::parse(R"({"podSelector": {}, "ingress": [{"ports": [{"port": "web"}]}]})"))};
    auto c = netpolCluster(objects);
    // x/a serves "web" on 8080, x/c on 9090: two rules; nothing else of x on n1.
    c.pods["x/a"].ports.push_back({"web", Protocol::TCP, 8080});
    c.pods["x/c"].ports.push_back({"web", Protocol::TCP, 9090});
    auto n1 = compilePolicy(c, "n1");
    ASSERT_EQ(n1.rules.size(), 2u);
    EXPECT_EQ(n1.rules[0].ports, (std::vector<PortMatch>{{Protocol::TCP, 8080, 8080}}));
    EXPECT_EQ(n1.rules[0].appliedTo, ips({"10.244.1.10"}));
    EXPECT_EQ(n1.rules[1].ports, (std::vector<PortMatch>{{Protocol::TCP, 9090, 9090}}));
    EXPECT_TRUE(n1.rules[0].anyPeer);
    // Alike: one rule for both.
    c.pods["x/c"].ports.back().port = 8080;
    EXPECT_EQ(compilePolicy(c, "n1").rules.size(), 1u);
    // Nowhere: no rule, the pods stay isolated.
    c.pods["x/a"].ports.pop_back();
    c.pods["x/c"].ports.pop_back();
    auto none = compilePolicy(c, "n1");
    EXPECT_TRUE(none.rules.empty());
    EXPECT_EQ(none.isolatedIngress.size(), 2u);
}

TEST(PolicyCompiler, IpBlockExceptIsCarvedOutAndHostNetworkPodsAreNeitherSelectedNorPeers) {
    auto c = netpolCluster({policyObject(
        "y", "p", json::parse(R"({"podSelector": {}, "policyTypes": ["Egress"],
             "egress": [{"to": [{"ipBlock": {"cidr": "10.244.0.0/22", "except": ["10.244.1.0/24"]}}, {"podSelector": {}}]}]})"))});
    c.pods["y/a"].hostNetwork = true;  // n2
    auto n1 = compilePolicy(c, "n1");
    ASSERT_EQ(n1.rules.size(), 1u);
    EXPECT_EQ(n1.rules[0].appliedTo, ips({"10.244.1.14"})) << "y/b; y/a is hostNetwork, y/c on n2";
    EXPECT_EQ(n1.rules[0].peers, ips({"10.244.0.0/24", "10.244.1.14", "10.244.2.0/23", "10.244.2.15"}));
    EXPECT_EQ(addressesOf(n1.isolatedEgress), ips({"10.244.1.14"}));
}

TEST(PolicyCompiler, AnIsolatedAddressNamesEveryPolicyOfItsDirectionOnce) {
    auto c = netpolCluster({policyObject("x", "deny", json::parse(R"({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})")),
                            policyObject("x", "a-only", json::parse(R"({"podSelector": {"matchLabels": {"pod": "a"}}})")),
                            policyObject("y", "other", json::parse(R"({"podSelector": {}})"))});
    auto n1 = compilePolicy(c, "n1");
    // x/a (10.244.1.10) and x/c (10.244.1.12) run on n1; y/b (10.244.1.14) too.
    EXPECT_EQ(n1.isolatedIngress, (std::vector<Isolation>{{IpPrefix::parse("10.244.1.10"), {"x/a-only", "x/deny"}},
                                                          {IpPrefix::parse("10.244.1.12"), {"x/deny"}},
                                                          {IpPrefix::parse("10.244.1.14"), {"y/other"}}}));
    EXPECT_EQ(n1.isolatedEgress, (std::vector<Isolation>{{IpPrefix::parse("10.244.1.10"), {"x/deny"}},
                                                         {IpPrefix::parse("10.244.1.12"), {"x/deny"}}}))
        << "a policy without Egress in policyTypes and no egress rules isolates for ingress only";
}
