#include "egress/EgressPlanner.hpp"

#include <algorithm>

namespace kovs::egress {
namespace {

// IPv4 networks, sorted, none inside another.
std::vector<IpPrefix> minimal(std::vector<IpPrefix> in) {
    std::vector<IpPrefix> v4;
    for (auto& p : in) {
        if (p.family == AF_INET) v4.push_back(p.network());
    }
    std::sort(v4.begin(), v4.end(), [](const IpPrefix& a, const IpPrefix& b) {
        return a.prefixLen != b.prefixLen ? a.prefixLen < b.prefixLen : a.bytes < b.bytes;
    });
    std::vector<IpPrefix> out;
    for (const auto& p : v4) {
        if (std::none_of(out.begin(), out.end(), [&](const IpPrefix& o) { return o.contains(p); })) out.push_back(p);
    }
    std::sort(out.begin(), out.end(), [](const IpPrefix& a, const IpPrefix& b) {
        return a.bytes != b.bytes ? a.bytes < b.bytes : a.prefixLen < b.prefixLen;
    });
    return out;
}

std::string join(const std::vector<IpPrefix>& v) {
    std::string s;
    for (const auto& p : v) s += (s.empty() ? "" : ", ") + p.str();
    return s;
}

}  // namespace

std::string EgressRules::describe() const {
    return "keep " + (keep.empty() ? std::string("nothing") : join(keep)) + "; masquerade from " +
           (masquerade.empty() ? std::string("nothing") : join(masquerade));
}

EgressRules planEgress(const EgressInputs& in) {
    EgressRules r;
    r.masquerade = minimal(in.clusterCidrs.empty() ? in.podCidrs : in.clusterCidrs);
    if (r.masquerade.empty()) return {};
    auto keep = in.podCidrs;
    keep.insert(keep.end(), in.clusterCidrs.begin(), in.clusterCidrs.end());
    for (const auto& a : in.nodeAddresses) keep.push_back(a.host());
    keep.insert(keep.end(), in.nonMasquerade.begin(), in.nonMasquerade.end());
    r.keep = minimal(std::move(keep));
    return r;
}

}  // namespace kovs::egress
