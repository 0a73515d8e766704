#include "egress/EgressPlanner.hpp"

#include <algorithm>

namespace kovs::egress {
namespace {

// The networks of one family, sorted, none inside another.
std::vector<IpPrefix> minimal(const std::vector<IpPrefix>& in, int family) {
    std::vector<IpPrefix> same;
    for (const auto& p : in) {
        if (p.family == family) same.push_back(p.network());
    }
    std::sort(same.begin(), same.end(), [](const IpPrefix& a, const IpPrefix& b) {
        return a.prefixLen != b.prefixLen ? a.prefixLen < b.prefixLen : a.bytes < b.bytes;
    });
    std::vector<IpPrefix> out;
    for (const auto& p : same) {
        if (std::none_of(out.begin(), out.end(), [&](const IpPrefix& o) { return o.contains(p); })) out.push_back(p);
    }
    std::sort(out.begin(), out.end(), [](const IpPrefix& a, const IpPrefix& b) {
        return a.bytes != b.bytes ? a.bytes < b.bytes : a.prefixLen < b.prefixLen;
    });
    return out;
}


}  // namespace

std::string EgressRules::describe() const {
    return "keep " + (keep.empty() ? std::string("nothing") : joinPrefixes(keep)) + "; masquerade from " +
           (masquerade.empty() ? std::string("nothing") : joinPrefixes(masquerade));
}

EgressRules planEgress(const EgressInputs& in, int family) {
    EgressRules r;
    // Configured cluster CIDRs replace the pod CIDRs family by family: a
    // dual-stack cluster may configure only its IPv4 one.
    auto sources = minimal(in.clusterCidrs, family);
    r.masquerade = sources.empty() ? minimal(in.podCidrs, family) : sources;
    if (r.masquerade.empty()) return {};
    auto keep = in.podCidrs;
    keep.insert(keep.end(), in.clusterCidrs.begin(), in.clusterCidrs.end());
    for (const auto& a : in.nodeAddresses) keep.push_back(a.host());
    keep.insert(keep.end(), in.nonMasquerade.begin(), in.nonMasquerade.end());
    r.keep = minimal(keep, family);
    return r;
}

}  // namespace kovs::egress
