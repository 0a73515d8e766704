#include "agent/NodeFamilies.hpp"

#include "agent/JobOptions.hpp"

#include <algorithm>

namespace kovs::agent {

std::string missingNodeFamily(const Config& c, const std::function<std::vector<IpPrefix>(const std::string&)>& addressesOf) {
    // With uplink.mode none the node's address may be on any interface.
    if (!standalone(c) || c.uplink.mode == Config::UplinkMode::None) return "";
    std::vector<IpPrefix> have;
    std::string where;
    for (const auto& dev : nodeAddressDevices(c)) {
        for (const auto& a : addressesOf(dev)) have.push_back(a);
        where += (where.empty() ? "" : " or ") + dev;
    }
    // An uplink with no address at all is not configured yet: nothing to judge by.
    if (have.empty()) return "";
    for (const auto& cidr : c.node.podCIDRs) {
        if (std::any_of(have.begin(), have.end(), [&](const IpPrefix& a) { return a.family == cidr.family; })) continue;
        std::string family = cidr.family == AF_INET6 ? "IPv6" : "IPv4";
        return "node.podCIDRs has the " + family + " pod CIDR " + cidr.str() + ", but this node has no " + family + " address (" +
               where + "): its pods could not reach beyond it over " + family +
               (cidr.family == AF_INET6 ? ". Is the node's network without IPv6 (kind: `docker network inspect kind`, EnableIPv6; "
                                          "ipFamily dual and ipv6 need it)?"
                                        : ".");
    }
    return "";
}

}  // namespace kovs::agent
