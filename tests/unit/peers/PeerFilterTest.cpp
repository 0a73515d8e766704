// Peers that would capture traffic that is not theirs are refused; between
// two that conflict, the newcomer.
#include <gtest/gtest.h>

#include "peers/PeerFilter.hpp"

using namespace kovs;
using namespace kovs::peers;

namespace {

Peer peer(const std::string& name, const std::string& ips, std::vector<std::string> cidrs, std::string created = "") {
    Peer p{name, {}, {}, std::move(created)};
    size_t start = 0;
    while (start <= ips.size()) {
        size_t comma = ips.find(',', start);
        p.nodeIPs.push_back(IpPrefix::parse(ips.substr(start, comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    for (const auto& c : cidrs) p.podCIDRs.push_back(IpPrefix::parse(c));
    return p;
}

PeerFilterOptions node1() {
    PeerFilterOptions o;
    o.self = "node1";
    o.localPodCidrs = {IpPrefix::parse("10.244.1.0/24"), IpPrefix::parse("fd00:10:244:1::/64")};
    o.serviceCidrs = {IpPrefix::parse("10.96.0.0/16"), IpPrefix::parse("fd00:10:96::/112")};
    return o;
}

std::string reasonFor(const FilteredPeers& f, const std::string& name) {
    for (const auto& r : f.rejected) {
        if (r.name == name) return r.reason;
    }
    return "";
}

// The metric label of a refusal, "" when the peer was not refused.
std::string labelFor(const FilteredPeers& f, const std::string& name) {
    for (const auto& r : f.rejected) {
        if (r.name == name) return refusalLabel(r.refusal);
    }
    return "";
}

}  // namespace

TEST(PeerFilter, AcceptsADualStackKindClusterAndDropsItself) {
    PeerSet all{{"node1", peer("node1", "172.18.0.2,fc00:f853:ccd:e793::2", {"10.244.1.0/24", "fd00:10:244:1::/64"})},
                {"node2", peer("node2", "172.18.0.3,fc00:f853:ccd:e793::3", {"10.244.2.0/24", "fd00:10:244:2::/64"})},
                {"node3", peer("node3", "172.18.0.4,fc00:f853:ccd:e793::4", {"10.244.3.0/24", "fd00:10:244:3::/64"})}};
    auto f = filterPeers(all, node1());
    EXPECT_TRUE(f.rejected.empty()) << f.rejected[0].name << ": " << f.rejected[0].reason;
    EXPECT_EQ(f.accepted.size(), 2u);
    EXPECT_FALSE(f.accepted.count("node1"));
}

TEST(PeerFilter, RejectsWideCidrsOverlapsWithThisNodeAndTheServiceCidrs) {
    PeerSet all{{"node1", peer("node1", "172.18.0.2", {"10.244.1.0/24"})},
                {"good", peer("good", "172.18.0.3", {"10.244.2.0/24"})},
                {"mine", peer("mine", "172.18.0.4", {"10.244.1.128/25"})},
                {"mine6", peer("mine6", "fc00::4", {"fd00:10:244:1:8000::/65"})},
                {"world", peer("world", "172.18.0.5", {"0.0.0.0/0"})},
                {"slash8", peer("slash8", "172.18.0.5", {"10.0.0.0/8"})},
                {"world6", peer("world6", "fc00::5", {"fd00::/8"})},
                {"nodes", peer("nodes", "172.18.0.6", {"172.18.0.0/24"})},
                {"svc", peer("svc", "172.18.0.7", {"10.96.0.0/12"})},
                {"svc6", peer("svc6", "fc00::7", {"fd00:10:96::/64"})}};
    auto f = filterPeers(all, node1());
    EXPECT_EQ(f.accepted.size(), 1u);
    EXPECT_TRUE(f.accepted.count("good"));
    EXPECT_EQ(reasonFor(f, "mine"), "pod CIDR 10.244.1.128/25 overlaps this node's 10.244.1.0/24");
    EXPECT_EQ(reasonFor(f, "mine6"), "pod CIDR fd00:10:244:1:8000::/65 overlaps this node's fd00:10:244:1::/64");
    EXPECT_EQ(reasonFor(f, "world"), "pod CIDR 0.0.0.0/0 is wider than /12");
    EXPECT_EQ(reasonFor(f, "slash8"), "pod CIDR 10.0.0.0/8 is wider than /12");
    EXPECT_EQ(reasonFor(f, "world6"), "pod CIDR fd00::/8 is wider than /36");
    EXPECT_EQ(reasonFor(f, "nodes"), "pod CIDR 172.18.0.0/24 holds the node address 172.18.0.2");
    EXPECT_EQ(reasonFor(f, "svc"), "pod CIDR 10.96.0.0/12 overlaps the Service CIDR 10.96.0.0/16");
    EXPECT_EQ(reasonFor(f, "svc6"), "pod CIDR fd00:10:96::/64 overlaps the Service CIDR fd00:10:96::/112");
    EXPECT_EQ(labelFor(f, "mine6"), "overlaps_this_node");
    EXPECT_EQ(labelFor(f, "world"), "wide_pod_cidr");
    EXPECT_EQ(labelFor(f, "world6"), "wide_pod_cidr");
    EXPECT_EQ(labelFor(f, "nodes"), "holds_node_address");
    EXPECT_EQ(labelFor(f, "svc6"), "overlaps_service_cidr");
}

// An address no tunnel can be pointed at (link-local, loopback, multicast,
// unspecified) and a tunnel address of the family this node's tunnel does
// not run on are refused, each with its reason; the good peers stay.
TEST(PeerFilter, UnusableAndOtherFamilyNodeAddressesAreRefused) {
    PeerSet all{{"node1", peer("node1", "fc00:f853:ccd:e793::2,172.18.0.2", {"fd00:10:244:1::/64"})},
                {"good", peer("good", "fc00:f853:ccd:e793::3,172.18.0.3", {"fd00:10:244:2::/64"})},
                {"ll6", peer("ll6", "fe80::1", {"fd00:10:244:3::/64"})},
                {"ll4", peer("ll4", "fc00:f853:ccd:e793::5,169.254.1.1", {"fd00:10:244:4::/64"})},
                {"lo", peer("lo", "::1", {"fd00:10:244:5::/64"})},
                {"mc", peer("mc", "ff02::1", {"fd00:10:244:6::/64"})},
                {"zero", peer("zero", "::", {"fd00:10:244:7::/64"})},
                {"v4first", peer("v4first", "172.18.0.9,fc00:f853:ccd:e793::9", {"fd00:10:244:8::/64"})}};
    auto f = filterPeers(all, node1());
    EXPECT_EQ(f.accepted.size(), 1u);
    EXPECT_TRUE(f.accepted.count("good"));
    EXPECT_EQ(reasonFor(f, "ll6"), "node address fe80::1 is link-local: no tunnel reaches it");
    EXPECT_EQ(reasonFor(f, "ll4"), "node address 169.254.1.1 is link-local: no tunnel reaches it");
    EXPECT_EQ(reasonFor(f, "lo"), "node address ::1 is loopback: no tunnel reaches it");
    EXPECT_EQ(reasonFor(f, "mc"), "node address ff02::1 is multicast: no tunnel reaches it");
    EXPECT_EQ(reasonFor(f, "zero"), "node address :: is unspecified: no tunnel reaches it");
    EXPECT_EQ(reasonFor(f, "v4first"), "node address 172.18.0.9 is IPv4, and this node's tunnel runs over IPv6");
    EXPECT_EQ(labelFor(f, "ll6"), "unusable_node_address");
    EXPECT_EQ(labelFor(f, "v4first"), "other_tunnel_family");
}

// This node's own Node object says which addresses are this node's, so a
// peer claiming one is refused even when the config names none.
TEST(PeerFilter, APeerClaimingThisNodesAddressIsRefused) {
    PeerSet all{{"node1", peer("node1", "172.18.0.2,fc00::2", {"10.244.1.0/24"})},
                {"thief", peer("thief", "172.18.0.2", {"10.244.9.0/24"})},
                {"thief6", peer("thief6", "fc00::9,fc00::2", {"10.244.8.0/24"})}};
    auto f = filterPeers(all, node1());
    EXPECT_TRUE(f.accepted.empty());
    EXPECT_EQ(reasonFor(f, "thief"), "node address 172.18.0.2 is this node's");
    EXPECT_EQ(reasonFor(f, "thief6"), "node address fc00::2 is this node's");
    EXPECT_EQ(labelFor(f, "thief6"), "this_nodes_address");
}

// The victim was there first: the newcomer is refused, never both, on every
// agent alike (creationTimestamp decides, the name breaks a tie).
TEST(PeerFilter, BetweenTwoConflictingPeersTheNewcomerIsRefused) {
    PeerSet all{{"victim", peer("victim", "172.18.0.3", {"10.244.2.0/24"}, "2026-12-01T10:00:00Z")},
                {"a-thief", peer("a-thief", "172.18.0.3", {"10.244.9.0/24"}, "2026-12-01T11:00:00Z")},
                {"b-overlap", peer("b-overlap", "172.18.0.8", {"10.244.2.128/25"}, "2026-12-01T09:59:59Z")},
                {"c", peer("c", "172.18.0.9", {"10.245.0.0/16"}, "2026-12-01T12:00:00Z")},
                {"d", peer("d", "172.18.0.10", {"10.245.3.0/24"}, "2026-12-01T12:00:00Z")}};
    auto f = filterPeers(all, node1());
    // b-overlap is the oldest: it keeps 10.244.2.128/25 and victim, created
    // after it, is the one that overlaps.
    EXPECT_TRUE(f.accepted.count("b-overlap"));
    EXPECT_EQ(reasonFor(f, "victim"), "pod CIDR 10.244.2.0/24 overlaps 10.244.2.128/25 of b-overlap");
    EXPECT_EQ(reasonFor(f, "a-thief"), "node address 172.18.0.3 is already victim's")
        << "a refused node still owns its address";
    EXPECT_TRUE(f.accepted.count("c"));
    EXPECT_EQ(reasonFor(f, "d"), "pod CIDR 10.245.3.0/24 overlaps 10.245.0.0/16 of c") << "same age: the name decides";
    EXPECT_EQ(labelFor(f, "a-thief"), "duplicate_node_address");
    EXPECT_EQ(labelFor(f, "d"), "overlaps_peer");

    // Without b-overlap the victim stands and the thief is refused.
    all.erase("b-overlap");
    f = filterPeers(all, node1());
    EXPECT_TRUE(f.accepted.count("victim"));
    EXPECT_EQ(reasonFor(f, "a-thief"), "node address 172.18.0.3 is already victim's");
    EXPECT_EQ(f.rejected.size(), 2u);
}
