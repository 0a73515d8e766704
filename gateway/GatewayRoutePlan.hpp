#pragma once
// Which routes the gateway guard keeps on gw0, and what one reconcile changes
// to get there. Pure, so each case is a unit test.
//
// Wanted: the prefix route the kernel adds with each guarded address (put
// back when it went with a flush), and the extra routes (peers' pod CIDRs,
// the service CIDR). A route of the main table through gw0 with the wanted
// destination and next hop counts as present whatever its protocol (the
// kernel's prefix route). Routes are only ever added with kKovsRouteProtocol,
// and only routes on gw0 carrying it that are no longer wanted are removed:
// nobody else's routes are touched.
#include <linux/rtnetlink.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "base/IpPrefix.hpp"
#include "base/RtnetlinkClient.hpp"

namespace kovs::gateway {

// Route protocol of every route kovs adds ("ip route show proto 107").
// 107 = 0x6b = 'k'; unused by the kernel (RTPROT_* <= 192 are named, none is
// 107) and by Debian's /etc/iproute2/rt_protos.
inline constexpr uint8_t kKovsRouteProtocol = 107;

// What one pass changes. The routes to add carry kKovsRouteProtocol; the
// ones to remove are kovs's own, as observed.
struct GatewayRoutePlan {
    std::vector<RouteInfo> add;
    std::vector<RouteInfo> remove;
};

// `guarded`: the addresses the guard keeps (GatewayAddresses::guarded()); an
// IPv4 extra route's source is the first IPv4 one. `extra`: the routes asked
// for, by destination and next hop (`gateway`; none: directly on the link).
std::vector<RouteInfo> desiredGatewayRoutes(const std::vector<IpPrefix>& guarded, const std::vector<RouteInfo>& extra);

// `observed`: RtnetlinkClient::routes() of gw0 (only unicast routes count; a
// multipath route is never removed). `removeStale`: false until the full
// route set is known (the agent's peers have not arrived yet): kovs routes on
// gw0 no longer wanted are then kept.
GatewayRoutePlan planGatewayRoutes(const std::vector<RouteInfo>& desired, const std::vector<RouteInfo>& observed, bool removeStale);

}  // namespace kovs::gateway
