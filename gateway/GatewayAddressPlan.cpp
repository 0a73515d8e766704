#include "gateway/GatewayAddressPlan.hpp"

#include <algorithm>

namespace kovs::gateway {

bool isIpv6LinkLocal(const IpPrefix& p) { return p.family == AF_INET6 && p.bytes[0] == 0xfe && (p.bytes[1] & 0xc0) == 0x80; }

namespace {

bool holds(const std::vector<IpPrefix>& set, const IpPrefix& a) { return std::find(set.begin(), set.end(), a) != set.end(); }

}  // namespace

GatewayAddressPlan planGatewayAddresses(const GatewayAddressPolicy& policy, const std::vector<IpPrefix>& adopted,
                                        const std::vector<IpPrefix>& observed) {
    std::vector<IpPrefix> have;
    for (const auto& a : observed) {
        if (!isIpv6LinkLocal(a) && !holds(have, a)) have.push_back(a);
    }
    GatewayAddressPlan plan;
    if (!policy.adopt) {
        plan.guarded = policy.configured;
        for (const auto& want : policy.configured) {
            if (!holds(have, want)) plan.add.push_back(want);
        }
        for (const auto& a : have) {
            if (!holds(policy.configured, a)) plan.remove.push_back(a);
        }
        return plan;
    }
    for (int family : {AF_INET, AF_INET6}) {
        bool present = std::any_of(have.begin(), have.end(), [&](const IpPrefix& a) { return a.family == family; });
        for (const auto& a : present ? have : adopted) {
            // `adopted` comes from an earlier plan, which never holds a
            // link-local one; nor does this one, whatever it is handed.
            if (a.family != family || isIpv6LinkLocal(a)) continue;
            plan.guarded.push_back(a);
            if (!present) plan.add.push_back(a);
        }
    }
    return plan;
}

}  // namespace kovs::gateway
