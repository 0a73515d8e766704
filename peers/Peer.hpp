#pragma once
// A peer node of the tunnel: where its VXLAN endpoint is (the underlay node
// address of each family) and which pod networks live behind it.
#include <map>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"

namespace kovs::peers {

struct Peer {
    std::string name;  // Kubernetes Node name, or the file's `name`
    // Host prefixes (/32, /128), at most one per family, in the order the
    // Node's status.addresses lists its InternalIPs (kind: IPv4 first in a
    // dual-stack cluster). Never empty in a PeerSet.
    std::vector<IpPrefix> nodeIPs;
    // Network prefixes in spec.podCIDRs' order (kind: the /24, then the /64),
    // duplicates dropped.
    std::vector<IpPrefix> podCIDRs;
    // metadata.creationTimestamp as the API server wrote it (RFC 3339, UTC,
    // so the text orders by time); "" from the peer file. What decides which
    // of two nodes claiming one address was there first, the same way on
    // every agent and after every restart.
    std::string creationTimestamp;

    // The underlay address the tunnel uses: the first one listed, as
    // kube-proxy and most CNIs take a node's primary address.
    const IpPrefix& tunnelIP() const { return nodeIPs.front(); }
    std::string tunnelAddress() const { return nodeIPs.front().addressString(); }
    // The node address of one family; null when it has none.
    const IpPrefix* nodeIP(int family) const;

    bool operator==(const Peer&) const = default;
};

// The full desired set, keyed by name: every PeerSource reports the whole set,
// never deltas, so a consumer can simply reconcile against it.
using PeerSet = std::map<std::string, Peer>;

// Why a node is not a peer, one value per rule: the label of the refusal
// metric (kovs_peers_rejected{reason=...}).
enum class Refusal {
    Unreadable,            // the Node did not decode (a podCIDR with host bits set)
    NoNodeAddress,         // no InternalIP
    UnusableNodeAddress,   // a link-local, loopback, multicast or unspecified one
    OtherTunnelFamily,     // tunnelled to over the family this node's tunnel does not run on
    ThisNodesAddress,      // claims an address of this node
    WideCidr,              // a pod CIDR wider than the filter allows (0.0.0.0/0)
    OverlapsThisNode,      // a pod CIDR overlapping this node's
    OverlapsServiceCidr,   // ... or cluster.serviceCIDRs
    HoldsNodeAddress,      // a pod CIDR holding a node's underlay address
    DuplicateNodeAddress,  // an address an older peer already has
    OverlapsPeer,          // a pod CIDR overlapping an older peer's
};
// Every refusal with its metric label, in one place: the metric lists them all.
struct RefusalLabel {
    Refusal refusal;
    const char* label;
};
inline constexpr RefusalLabel kRefusals[] = {
    {Refusal::Unreadable, "unreadable"},
    {Refusal::NoNodeAddress, "no_node_address"},
    {Refusal::UnusableNodeAddress, "unusable_node_address"},
    {Refusal::OtherTunnelFamily, "other_tunnel_family"},
    {Refusal::ThisNodesAddress, "this_nodes_address"},
    {Refusal::WideCidr, "wide_pod_cidr"},
    {Refusal::OverlapsThisNode, "overlaps_this_node"},
    {Refusal::OverlapsServiceCidr, "overlaps_service_cidr"},
    {Refusal::HoldsNodeAddress, "holds_node_address"},
    {Refusal::DuplicateNodeAddress, "duplicate_node_address"},
    {Refusal::OverlapsPeer, "overlaps_peer"},
};
const char* refusalLabel(Refusal r);  // "duplicate_node_address"

// A node that is not a peer, and why: it did not decode (a podCIDR with host
// bits set), or the peer filter refused it (an overlap, a stolen address).
struct RejectedPeer {
    std::string name;
    std::string reason;  // "pod CIDR 10.244.1.0/24 overlaps this node's 10.244.1.0/24"
    Refusal refusal;
    bool operator==(const RejectedPeer&) const = default;
};

// An IPv4 or IPv6 address as a host prefix ("fd00::01" -> fd00::1/128);
// throws kovs::Error naming `what` when it is anything else (a prefix too).
IpPrefix parseNodeIP(const std::string& text, const std::string& what);
// A CIDR whose host bits are zero ("10.244.1.0/24"); throws kovs::Error
// naming `what` otherwise.
IpPrefix parsePodCIDR(const std::string& text, const std::string& what);

}  // namespace kovs::peers
