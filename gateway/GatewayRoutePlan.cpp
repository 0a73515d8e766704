#include "gateway/GatewayRoutePlan.hpp"

#include <cstring>

namespace kovs::gateway {
namespace {

// The metrics the kernel itself gives IPv6 routes: 256 to an address's
// prefix route, 1024 to a route added without one.
constexpr uint32_t kIpv6KernelPrefixMetric = 256;
constexpr uint32_t kIpv6UserMetric = 1024;

bool sameAddress(const IpPrefix& a, const IpPrefix& b) {
    return a.family == b.family && std::memcmp(a.bytes.data(), b.bytes.data(), a.size()) == 0;
}

bool sameNextHop(const std::optional<IpPrefix>& want, const std::optional<IpPrefix>& have) {
    return want.has_value() == have.has_value() && (!want || sameAddress(*want, *have));
}

}  // namespace

std::vector<DesiredGatewayRoute> desiredGatewayRoutes(const std::vector<IpPrefix>& guarded, const std::vector<GatewayRoute>& extra) {
    std::vector<DesiredGatewayRoute> desired;
    std::optional<IpPrefix> ipv4Source;
    for (const auto& a : guarded) {
        if (a.family == AF_INET && !ipv4Source) ipv4Source = a;
        if (a.prefixLen == a.maxPrefixLen()) continue;  // a host address brings no prefix route
        DesiredGatewayRoute d{a.network(), std::nullopt, std::nullopt, RT_SCOPE_LINK, 0};
        if (a.family == AF_INET) d.src = a;
        else d.priority = kIpv6KernelPrefixMetric;
        desired.push_back(d);
    }
    for (const auto& r : extra) {
        DesiredGatewayRoute d{r.dst.network(), r.via, std::nullopt, static_cast<uint8_t>(r.via ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK), 0};
        if (r.dst.family == AF_INET) d.src = ipv4Source;
        else d.priority = kIpv6UserMetric;
        desired.push_back(d);
    }
    return desired;
}

GatewayRoutePlan planGatewayRoutes(const std::vector<DesiredGatewayRoute>& desired,
                                   const std::vector<ObservedGatewayRoute>& observed, bool removeStale) {
    GatewayRoutePlan plan;
    std::vector<bool> found(desired.size(), false);
    for (size_t i = 0; i < observed.size(); ++i) {
        const auto& o = observed[i];
        bool matched = false;
        for (const auto& via : o.vias) {
            for (size_t k = 0; k < desired.size(); ++k) {
                if (desired[k].dst == o.dst && sameNextHop(desired[k].via, via)) found[k] = matched = true;
            }
        }
        if (!matched && o.protocol == kKovsRouteProtocol && removeStale) plan.remove.push_back(i);
    }
    for (size_t k = 0; k < desired.size(); ++k) {
        if (!found[k]) plan.add.push_back(desired[k]);
    }
    return plan;
}

}  // namespace kovs::gateway
