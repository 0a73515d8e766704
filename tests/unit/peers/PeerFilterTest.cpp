// Peers that would capture traffic that is not theirs are refused.
#include <gtest/gtest.h>

#include "peers/PeerFilter.hpp"

using namespace kovs;
using namespace kovs::peers;

namespace {

Peer peer(const std::string& name, const std::string& ip, std::vector<std::string> cidrs) { return {name, ip, std::move(cidrs)}; }

PeerFilterOptions node1() {
    PeerFilterOptions o;
    o.self = "node1";
    o.localPodCidrs = {IpPrefix::parse("10.244.1.0/24")};
    o.localNodeIPs = {IpPrefix::parse("172.18.0.2")};
    return o;
}

std::string reasonFor(const FilteredPeers& f, const std::string& name) {
    for (const auto& r : f.rejected) {
        if (r.name == name) return r.reason;
    }
    return "";
}

}  // namespace

TEST(PeerFilter, AcceptsAKindClusterAndDropsItself) {
    PeerSet all{{"node1", peer("node1", "172.18.0.2", {"10.244.1.0/24"})},
                {"node2", peer("node2", "172.18.0.3", {"10.244.2.0/24"})},
                {"node3", peer("node3", "172.18.0.4", {"10.244.3.0/24"})}};
    auto f = filterPeers(all, node1());
    EXPECT_TRUE(f.rejected.empty());
    EXPECT_EQ(f.accepted.size(), 2u);
    EXPECT_FALSE(f.accepted.count("node1"));
}

TEST(PeerFilter, RejectsOverlapsWideCidrsAndNodeAddresses) {
    PeerSet all{{"good", peer("good", "172.18.0.3", {"10.244.2.0/24"})},
                {"mine", peer("mine", "172.18.0.4", {"10.244.1.128/25"})},
                {"world", peer("world", "172.18.0.5", {"0.0.0.0/0"})},
                {"nodes", peer("nodes", "172.18.0.6", {"172.18.0.0/24"})},
                {"a", peer("a", "172.18.0.7", {"10.245.0.0/16"})},
                {"b", peer("b", "172.18.0.8", {"10.245.3.0/24"})},
                {"twin", peer("twin", "172.18.0.2", {"10.244.9.0/24"})}};
    auto f = filterPeers(all, node1());
    EXPECT_EQ(f.accepted.size(), 1u);
    EXPECT_TRUE(f.accepted.count("good"));
    EXPECT_EQ(reasonFor(f, "mine"), "pod CIDR 10.244.1.128/25 overlaps this node's 10.244.1.0/24");
    EXPECT_EQ(reasonFor(f, "world"), "pod CIDR 0.0.0.0/0 is wider than /8");
    EXPECT_EQ(reasonFor(f, "nodes"), "pod CIDR 172.18.0.0/24 holds the node address 172.18.0.2 of node1");
    EXPECT_EQ(reasonFor(f, "a"), "pod CIDR 10.245.0.0/16 overlaps 10.245.3.0/24 of b");
    EXPECT_EQ(reasonFor(f, "b"), "pod CIDR 10.245.3.0/24 overlaps 10.245.0.0/16 of a");
    EXPECT_EQ(reasonFor(f, "twin"), "node address 172.18.0.2 is also this node's");
}

TEST(PeerFilter, AnUnreadableAddressIsARejectionNotACrash) {
    PeerSet all{{"bad", peer("bad", "not-an-ip", {"10.244.2.0/24"})}};
    auto f = filterPeers(all, node1());
    ASSERT_EQ(f.rejected.size(), 1u);
    EXPECT_NE(f.rejected[0].reason.find("not-an-ip"), std::string::npos) << f.rejected[0].reason;
}
