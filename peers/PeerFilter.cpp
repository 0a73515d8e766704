#include "peers/PeerFilter.hpp"

#include <algorithm>
#include <optional>

namespace kovs::peers {
namespace {

int minPrefixLen(const IpPrefix& p, const PeerFilterOptions& o) {
    return p.family == AF_INET ? o.minIPv4PrefixLen : o.minIPv4PrefixLen + 24;
}

struct Problem {
    Refusal refusal;
    std::string why;
};

// What is wrong with a peer on its own, or against this node.
std::optional<Problem> ownProblem(const Peer& p, const std::vector<IpPrefix>& localNodeIPs,
                                  const std::vector<IpPrefix>& everyNodeIP, const PeerFilterOptions& o) {
    if (p.nodeIPs.empty()) return Problem{Refusal::NoNodeAddress, "no node address"};
    for (const auto& ip : p.nodeIPs) {
        if (std::find(localNodeIPs.begin(), localNodeIPs.end(), ip) != localNodeIPs.end())
            return Problem{Refusal::ThisNodesAddress, "node address " + ip.addressString() + " is this node's"};
    }
    for (const auto& c : p.podCIDRs) {
        if (c.prefixLen < minPrefixLen(c, o))
            return Problem{Refusal::WideCidr,
                           "pod CIDR " + c.str() + " is wider than /" + std::to_string(minPrefixLen(c, o))};
        for (const auto& local : o.localPodCidrs) {
            if (c.overlaps(local))
                return Problem{Refusal::OverlapsThisNode, "pod CIDR " + c.str() + " overlaps this node's " + local.str()};
        }
        for (const auto& svc : o.serviceCidrs) {
            if (c.overlaps(svc))
                return Problem{Refusal::OverlapsServiceCidr,
                               "pod CIDR " + c.str() + " overlaps the Service CIDR " + svc.str()};
        }
        for (const auto& ip : everyNodeIP) {
            if (c.contains(ip))
                return Problem{Refusal::HoldsNodeAddress,
                               "pod CIDR " + c.str() + " holds the node address " + ip.addressString()};
        }
    }
    return std::nullopt;
}

// What `p` would take from `owner`, a peer already accepted.
std::optional<Problem> conflict(const Peer& p, const Peer& owner) {
    for (const auto& ip : p.nodeIPs) {
        if (std::find(owner.nodeIPs.begin(), owner.nodeIPs.end(), ip) != owner.nodeIPs.end())
            return Problem{Refusal::DuplicateNodeAddress,
                           "node address " + ip.addressString() + " is already " + owner.name + "'s"};
    }
    for (const auto& c : p.podCIDRs) {
        for (const auto& o : owner.podCIDRs) {
            if (c.overlaps(o))
                return Problem{Refusal::OverlapsPeer, "pod CIDR " + c.str() + " overlaps " + o.str() + " of " + owner.name};
        }
    }
    return std::nullopt;
}

}  // namespace

FilteredPeers filterPeers(const PeerSet& all, const PeerFilterOptions& opts) {
    std::vector<IpPrefix> localNodeIPs = opts.localNodeIPs;
    if (auto self = all.find(opts.self); self != all.end()) {
        for (const auto& ip : self->second.nodeIPs) appendUnique(localNodeIPs, ip);
    }
    std::vector<IpPrefix> everyNodeIP = localNodeIPs;
    std::vector<const Peer*> byAge;
    for (const auto& [name, p] : all) {
        if (name == opts.self) continue;
        for (const auto& ip : p.nodeIPs) appendUnique(everyNodeIP, ip);
        byAge.push_back(&p);
    }
    // Oldest first; a Node without a timestamp (the peer file) sorts by name.
    std::stable_sort(byAge.begin(), byAge.end(), [](const Peer* a, const Peer* b) {
        return std::tie(a->creationTimestamp, a->name) < std::tie(b->creationTimestamp, b->name);
    });

    // A conflict is judged against every older peer that stands on its own,
    // accepted or not: a node refused for overlapping an older one still owns
    // its address, so a third node cannot take it over.
    FilteredPeers out;
    std::vector<const Peer*> older;
    for (const Peer* p : byAge) {
        auto why = ownProblem(*p, localNodeIPs, everyNodeIP, opts);
        bool standsAlone = !why;
        for (size_t i = 0; !why && i < older.size(); ++i) why = conflict(*p, *older[i]);
        if (standsAlone) older.push_back(p);
        if (why) {
            out.rejected.push_back({p->name, why->why, why->refusal});
        } else {
            out.accepted.emplace(p->name, *p);
        }
    }
    std::sort(out.rejected.begin(), out.rejected.end(),
              [](const RejectedPeer& a, const RejectedPeer& b) { return a.name < b.name; });
    return out;
}

}  // namespace kovs::peers
