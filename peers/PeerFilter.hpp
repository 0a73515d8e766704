#pragma once
// Which peers this node may program. A peer whose pod CIDR would capture
// traffic that is not its own is rejected, never installed, whatever the
// source says: the tunnel routes and flows of a peer send every packet to its
// pod CIDR through the tunnel, so an overlap with this node's pod CIDR or
// another peer's, a CIDR that holds a node address, or an absurdly wide one
// (0.0.0.0/0) would black-hole or hijack the node's traffic. Rejections are
// logged when they change and shown by `kovsctl status` and doctor.
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "peers/Peer.hpp"

namespace kovs::peers {

struct RejectedPeer {
    std::string name;
    std::string reason;  // "pod CIDR 10.244.1.0/24 overlaps this node's 10.244.1.0/24"
    bool operator==(const RejectedPeer&) const = default;
};

struct FilteredPeers {
    PeerSet accepted;  // without this node itself
    std::vector<RejectedPeer> rejected;
};

struct PeerFilterOptions {
    std::string self;                   // this node's name: not a peer
    std::vector<IpPrefix> localPodCidrs;
    std::vector<IpPrefix> localNodeIPs;  // this node's underlay addresses (may be empty)
    // Pod CIDRs wider than this are rejected (IPv4; IPv6 uses the same
    // count of host bits less: /8 -> /32).
    int minIPv4PrefixLen = 8;
};

FilteredPeers filterPeers(const PeerSet& all, const PeerFilterOptions& opts);

}  // namespace kovs::peers
