// The evaluator on the upstream suite's cluster: a few truths worked out by
// hand from the Kubernetes documentation, so that the truth tables the flow
// tests compare against stand on something.
#include <gtest/gtest.h>

#include "policy/PolicyEvaluator.hpp"
#include "tests/support/PolicyCluster.hpp"

using namespace kovs::policy;
using kovs::IpPrefix;
using kovs::test::netpolCluster;
using kovs::test::policyObject;
using nlohmann::json;

namespace {

Endpoint pod(const PolicyCluster& c, const std::string& key) {
    const auto& p = c.pods.at(key);
    return {key, p.ips.at(0), p.nodeName};
}
Endpoint node(const char* name, const char* ip) { return {std::nullopt, IpPrefix::parse(ip), name}; }
Endpoint outside(const char* ip) { return {std::nullopt, IpPrefix::parse(ip), ""}; }

}  // namespace

TEST(PolicyEvaluator, NoPolicyAllowsEverything) {
    auto c = netpolCluster({});
    EXPECT_TRUE(allowed(c, pod(c, "x/a"), pod(c, "z/c"), Protocol::UDP, 81));
    EXPECT_TRUE(allowed(c, outside("192.0.2.1"), pod(c, "x/a"), Protocol::TCP, 80));
}

TEST(PolicyEvaluator, DenyAllIngressLeavesTheOwnNodeAndEgressAlone) {
    auto c = netpolCluster({policyObject("x", "deny", {{"podSelector", json::object()}, {"policyTypes", {"Ingress"}}})});
    EXPECT_FALSE(allowed(c, pod(c, "y/a"), pod(c, "x/a"), Protocol::TCP, 80));
    EXPECT_FALSE(allowed(c, pod(c, "x/b"), pod(c, "x/a"), Protocol::TCP, 80)) << "its own namespace too";
    EXPECT_FALSE(allowed(c, node("n2", "172.18.0.3"), pod(c, "x/a"), Protocol::TCP, 80)) << "x/a runs on n1";
    EXPECT_TRUE(allowed(c, node("n1", "10.244.1.1"), pod(c, "x/a"), Protocol::TCP, 80)) << "its own node";
    EXPECT_TRUE(allowed(c, pod(c, "x/a"), pod(c, "y/a"), Protocol::TCP, 80)) << "egress is not isolated";
}

TEST(PolicyEvaluator, SelectorsPortsAndNamedPorts) {
    auto c = netpolCluster({policyObject(
        "x", "p",
        json::parse(R"({"podSelector": {"matchLabels": {"pod": "a"}},
          "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}, "podSelector": {"matchLabels": {"pod": "c"}}}],
                       "ports": [{"port": "serve-81-tcp"}]}]})"))});
    EXPECT_TRUE(allowed(c, pod(c, "y/c"), pod(c, "x/a"), Protocol::TCP, 81));
    EXPECT_FALSE(allowed(c, pod(c, "y/c"), pod(c, "x/a"), Protocol::TCP, 80));
    EXPECT_FALSE(allowed(c, pod(c, "y/c"), pod(c, "x/a"), Protocol::UDP, 81));
    EXPECT_FALSE(allowed(c, pod(c, "y/b"), pod(c, "x/a"), Protocol::TCP, 81));
    EXPECT_FALSE(allowed(c, pod(c, "x/c"), pod(c, "x/a"), Protocol::TCP, 81));
    EXPECT_TRUE(allowed(c, pod(c, "x/c"), pod(c, "x/b"), Protocol::TCP, 80)) << "x/b is not selected";
}

TEST(PolicyEvaluator, EgressIpBlockWithExceptAndUnionOfPolicies) {
    auto c = netpolCluster(
        {policyObject("z", "a", json::parse(R"({"podSelector": {}, "policyTypes": ["Egress"],
             "egress": [{"to": [{"ipBlock": {"cidr": "10.244.0.0/16", "except": ["10.244.2.0/24"]}}]}]})")),
         policyObject("z", "b", json::parse(R"({"podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Egress"],
             "egress": [{"to": [{"ipBlock": {"cidr": "192.0.2.0/24"}}], "ports": [{"protocol": "UDP", "port": 53}]}]})"))});
    // x/a 10.244.1.10 (n1), x/b 10.244.2.11 (n2)
    EXPECT_TRUE(allowed(c, pod(c, "z/a"), pod(c, "x/a"), Protocol::TCP, 80));
    EXPECT_FALSE(allowed(c, pod(c, "z/a"), pod(c, "x/b"), Protocol::TCP, 80));
    EXPECT_TRUE(allowed(c, pod(c, "z/a"), outside("192.0.2.53"), Protocol::UDP, 53));
    EXPECT_FALSE(allowed(c, pod(c, "z/b"), outside("192.0.2.53"), Protocol::UDP, 53)) << "policy b selects only z/a";
    EXPECT_FALSE(allowed(c, pod(c, "z/a"), outside("192.0.2.53"), Protocol::TCP, 53));
}
