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

// What makes an address no node's underlay address: a tunnel cannot be
// pointed at it. "" when it can.
std::string unusable(const IpPrefix& ip) {
    static const IpPrefix kinds[][2] = {
        {IpPrefix::parse("169.254.0.0/16"), IpPrefix::parse("fe80::/10")},
        {IpPrefix::parse("127.0.0.0/8"), IpPrefix::parse("::1/128")},
        {IpPrefix::parse("224.0.0.0/4"), IpPrefix::parse("ff00::/8")},
        {IpPrefix::parse("0.0.0.0/32"), IpPrefix::parse("::/128")},
    };
    static const char* names[] = {"link-local", "loopback", "multicast", "unspecified"};
    for (size_t i = 0; i < std::size(kinds); ++i) {
        if (kinds[i][0].contains(ip) || kinds[i][1].contains(ip)) return names[i];
    }
    return "";
}

const char* familyName(int family) { return family == AF_INET6 ? "IPv6" : "IPv4"; }

// What is wrong with a peer on its own, or against this node.
// `tunnelFamily`: the family of this node's own tunnel address, 0 when unknown.
std::optional<Problem> ownProblem(const Peer& p, const std::vector<IpPrefix>& localNodeIPs,
                                  const std::vector<IpPrefix>& everyNodeIP, int tunnelFamily, const PeerFilterOptions& o) {
    if (p.nodeIPs.empty()) return Problem{Refusal::NoNodeAddress, "no node address"};
    for (const auto& ip : p.nodeIPs) {
        if (auto kind = unusable(ip); !kind.empty())
            return Problem{Refusal::UnusableNodeAddress, "node address " + ip.addressString() + " is " + kind + ": no tunnel reaches it"};
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
    if (tunnelFamily && p.tunnelIP().family != tunnelFamily)
        return Problem{Refusal::OtherTunnelFamily, "node address " + p.tunnelAddress() + " is " + familyName(p.tunnelIP().family) +
                                                       ", and this node's tunnel runs over " + familyName(tunnelFamily)};
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
    // The family this node is tunnelled to over, as its own Node lists it first.
    int tunnelFamily = 0;
    if (auto self = all.find(opts.self); self != all.end() && !self->second.nodeIPs.empty()) {
        tunnelFamily = self->second.tunnelIP().family;
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
        auto why = ownProblem(*p, localNodeIPs, everyNodeIP, tunnelFamily, opts);
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
