#pragma once
// Which peers this node may program. A peer whose pod CIDR would capture
// traffic that is not its own is refused, never installed, whatever the
// source says: the tunnel routes and flows of a peer send every packet to its
// pod CIDR through the tunnel, so an overlap with this node's pod CIDR, a
// Service CIDR or another peer's, a CIDR that holds a node address, an
// absurdly wide one (0.0.0.0/0) or a node address that is another node's
// would black-hole or hijack the node's traffic.
//
// Between two peers that conflict (an overlapping pod CIDR, the same node
// address) the newcomer is refused, never both: peers are taken oldest first
// (creationTimestamp, then name), so one Node that claims a victim's address
// cannot cut the victim off, and every agent, before and after a restart,
// decides the same. Refusals are logged when they change and shown by
// `kovsctl status`, doctor and /metrics.
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "peers/Peer.hpp"

namespace kovs::peers {

struct FilteredPeers {
    PeerSet accepted;  // without this node itself
    std::vector<RejectedPeer> rejected;
};

struct PeerFilterOptions {
    std::string self;  // this node's name: not a peer; its entry's node addresses join localNodeIPs
    std::vector<IpPrefix> localPodCidrs;
    std::vector<IpPrefix> localNodeIPs;  // this node's underlay addresses known from the config
    std::vector<IpPrefix> serviceCidrs;  // cluster.serviceCIDRs
    // Pod CIDRs wider than this are rejected (IPv4; IPv6 uses the same
    // count of host bits less: /12 -> /36). kube-controller-manager hands
    // each node a /24 and a /64 by default; a /16 per node is a big cluster
    // network's choice; a /8 is one node taking the network.
    int minIPv4PrefixLen = 12;
};

FilteredPeers filterPeers(const PeerSet& all, const PeerFilterOptions& opts);

}  // namespace kovs::peers
