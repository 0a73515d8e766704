// A v1 Node as a tunnel peer: every InternalIP, podCIDRs in the API's order,
// creationTimestamp; a malformed Node is an error naming it (the informer
// then skips that Node alone).
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "peers/KubeNode.hpp"

using kovs::Error;
using kovs::joinPrefixes;
using namespace kovs::peers;
using nlohmann::json;

namespace {

json node(const std::string& name, json addresses, json spec = json::object()) {
    return {{"kind", "Node"},
            {"metadata", {{"name", name}, {"resourceVersion", "7"}, {"creationTimestamp", "2026-12-01T10:00:00Z"}}},
            {"spec", spec},
            {"status", {{"addresses", addresses}}}};
}

json internalIP(const std::string& a) { return {{"type", "InternalIP"}, {"address", a}}; }

std::string errorOf(const json& n) {
    try {
        peerFromNode(n);
    } catch (const Error& e) {
        return e.what();
    }
    return "<no error>";
}

}  // namespace

TEST(KubeNode, DualStackNodeKeepsBothAddressesAndTheApiOrder) {
    auto p = peerFromNode(node("kind-worker",
                               json::array({{{"type", "Hostname"}, {"address", "kind-worker"}}, internalIP("172.18.0.3"),
                                            internalIP("fc00:f853:ccd:e793::3")}),
                               {{"podCIDR", "fd00:10:244:1::/64"}, {"podCIDRs", {"fd00:10:244:1::/64", "10.244.1.0/24"}}}));
    ASSERT_TRUE(p);
    EXPECT_EQ(p->name, "kind-worker");
    EXPECT_EQ(joinPrefixes(p->nodeIPs), "172.18.0.3/32, fc00:f853:ccd:e793::3/128");
    EXPECT_EQ(p->tunnelAddress(), "172.18.0.3") << "the first InternalIP carries the tunnel";
    ASSERT_TRUE(p->nodeIP(AF_INET6));
    EXPECT_EQ(p->nodeIP(AF_INET6)->addressString(), "fc00:f853:ccd:e793::3");
    EXPECT_EQ(joinPrefixes(p->podCIDRs), "fd00:10:244:1::/64, 10.244.1.0/24") << "not sorted: the API's order";
    EXPECT_EQ(p->creationTimestamp, "2026-12-01T10:00:00Z");
}

TEST(KubeNode, OldClustersOnlyHavePodCIDR) {
    auto p = peerFromNode(node("n", json::array({internalIP("fd00::0003")}), {{"podCIDR", "10.244.3.0/24"}}));
    ASSERT_TRUE(p);
    EXPECT_EQ(p->tunnelAddress(), "fd00::3");
    EXPECT_EQ(joinPrefixes(p->podCIDRs), "10.244.3.0/24");
}

TEST(KubeNode, NodeWithoutInternalIPIsNoPeerYet) {
    EXPECT_FALSE(peerFromNode(node("n", json::array({{{"type", "ExternalIP"}, {"address", "1.2.3.4"}}}))));
    EXPECT_FALSE(peerFromNode({{"metadata", {{"name", "n"}}}}));
}

TEST(KubeNode, MalformedNodesAreErrorsThatNameTheNodeAndTheField) {
    EXPECT_THROW(peerFromNode(json::array()), Error);
    EXPECT_THROW(peerFromNode({{"metadata", {{"name", 5}}}}), Error);
    EXPECT_THROW(peerFromNode({{"metadata", {{"name", ""}}}}), Error);
    EXPECT_EQ(errorOf(node("n", json::array({internalIP("not-an-ip")}))),
              "Node n InternalIP: 'not-an-ip' is not an IPv4 or IPv6 address");
    EXPECT_THROW(peerFromNode(node("n", json::array({{{"type", "InternalIP"}}}))), Error);
    EXPECT_THROW(peerFromNode(node("n", "oops")), Error);
    EXPECT_EQ(errorOf(node("n3", json::array({internalIP("1.2.3.4")}), {{"podCIDRs", {"10.244.3.1/24"}}})),
              "Node n3.spec.podCIDRs: '10.244.3.1/24' has host bits set");
    EXPECT_THROW(peerFromNode(node("n", json::array({internalIP("1.2.3.4")}), {{"podCIDRs", {7}}})), Error);
    EXPECT_EQ(errorOf(node("n", json::array({internalIP("1.2.3.4"), internalIP("1.2.3.5")}))),
              "Node n: two InternalIPs of one family (1.2.3.4, 1.2.3.5)");
}
