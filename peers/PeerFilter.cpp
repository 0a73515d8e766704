#include "peers/PeerFilter.hpp"

#include <map>

#include "base/Error.hpp"

namespace kovs::peers {
namespace {

int minPrefixLen(const IpPrefix& p, const PeerFilterOptions& o) {
    return p.family == AF_INET ? o.minIPv4PrefixLen : o.minIPv4PrefixLen + 24;
}

}  // namespace

FilteredPeers filterPeers(const PeerSet& all, const PeerFilterOptions& opts) {
    std::map<std::string, std::string> why;  // peer -> first reason found
    auto reject = [&](const std::string& name, const std::string& reason) { why.emplace(name, reason); };

    std::map<std::string, std::vector<IpPrefix>> cidrs;
    std::vector<std::pair<std::string, IpPrefix>> nodeIPs;  // every node's underlay address
    for (const auto& a : opts.localNodeIPs) nodeIPs.emplace_back(opts.self, a);
    for (const auto& [name, p] : all) {
        if (name == opts.self) continue;
        try {  // the sources hand over canonical addresses; anything else is refused here too
            nodeIPs.emplace_back(name, IpPrefix::parse(p.nodeIP));
            for (const auto& c : p.podCIDRs) cidrs[name].push_back(IpPrefix::parse(c));
        } catch (const Error& e) {
            reject(name, e.what());
        }
    }
    // First what each peer's own CIDRs say, then overlaps among the peers
    // still standing: one absurd peer (0.0.0.0/0) must not take the others down.
    for (const auto& [name, list] : cidrs) {
        for (const auto& c : list) {
            if (c.prefixLen < minPrefixLen(c, opts))
                reject(name, "pod CIDR " + c.str() + " is wider than /" + std::to_string(minPrefixLen(c, opts)));
            for (const auto& local : opts.localPodCidrs) {
                if (c.overlaps(local)) reject(name, "pod CIDR " + c.str() + " overlaps this node's " + local.str());
            }
            for (const auto& [owner, ip] : nodeIPs) {
                if (c.contains(ip))
                    reject(name, "pod CIDR " + c.str() + " holds the node address " + ip.addressString() + " of " + owner);
            }
        }
    }
    auto standing = why;
    for (const auto& [name, list] : cidrs) {
        if (standing.count(name)) continue;
        for (const auto& c : list) {
            for (const auto& [other, otherList] : cidrs) {
                if (other == name || standing.count(other)) continue;
                for (const auto& o : otherList) {
                    if (c.overlaps(o)) reject(name, "pod CIDR " + c.str() + " overlaps " + o.str() + " of " + other);
                }
            }
        }
    }
    for (size_t i = 0; i < nodeIPs.size(); ++i) {
        for (size_t j = 0; j < nodeIPs.size(); ++j) {
            const auto& [a, ipA] = nodeIPs[i];
            const auto& [b, ipB] = nodeIPs[j];
            if (i != j && ipA == ipB && a != opts.self)
                reject(a, "node address " + ipA.addressString() + " is also " + (b == opts.self ? "this node's" : b + "'s"));
        }
    }
    FilteredPeers out;
    for (const auto& [name, p] : all) {
        if (name == opts.self) continue;
        if (auto it = why.find(name); it != why.end()) {
            out.rejected.push_back({name, it->second});
        } else {
            out.accepted.emplace(name, p);
        }
    }
    return out;
}

}  // namespace kovs::peers
