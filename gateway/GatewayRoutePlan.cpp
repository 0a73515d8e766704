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

std::vector<RouteInfo> desiredGatewayRoutes(const std::vector<IpPrefix>& guarded, const std::vector<RouteInfo>& extra) {
    std::vector<RouteInfo> desired;
    std::optional<IpPrefix> ipv4Source;
    auto route = [](const IpPrefix& dst, std::optional<IpPrefix> via) {
        RouteInfo r;
        r.dst = dst.network();
        r.gateway = via ? std::optional(via->host()) : std::nullopt;
        r.protocol = kKovsRouteProtocol;
        r.scope = via ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
        return r;
    };
    for (const auto& a : guarded) {
        if (a.family == AF_INET && !ipv4Source) ipv4Source = a.host();
        if (a.prefixLen == a.maxPrefixLen()) continue;  // a host address brings no prefix route
        auto r = route(a, std::nullopt);
        if (a.family == AF_INET) r.prefsrc = a.host();
        else r.priority = kIpv6KernelPrefixMetric;
        desired.push_back(r);
    }
    for (const auto& e : extra) {
        auto r = route(e.dst, e.gateway);
        if (e.dst.family == AF_INET) r.prefsrc = ipv4Source;
        else r.priority = kIpv6UserMetric;
        desired.push_back(r);
    }
    return desired;
}

GatewayRoutePlan planGatewayRoutes(const std::vector<RouteInfo>& desired, const std::vector<RouteInfo>& observed, bool removeStale) {
    GatewayRoutePlan plan;
    std::vector<bool> found(desired.size(), false);
    for (const auto& o : observed) {
        if (o.type != RTN_UNICAST) continue;
        bool matched = false;
        for (size_t k = 0; k < desired.size(); ++k) {
            if (desired[k].dst == o.dst && sameNextHop(desired[k].gateway, o.gateway)) found[k] = matched = true;
        }
        if (!matched && o.protocol == kKovsRouteProtocol && !o.multipath && removeStale) plan.remove.push_back(o);
    }
    for (size_t k = 0; k < desired.size(); ++k) {
        if (!found[k]) plan.add.push_back(desired[k]);
    }
    return plan;
}

}  // namespace kovs::gateway
