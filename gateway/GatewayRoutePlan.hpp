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

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/IpPrefix.hpp"

namespace kovs::gateway {

// Route protocol of every route kovs adds ("ip route show proto 107").
// 107 = 0x6b = 'k'; unused by the kernel (RTPROT_* <= 192 are named, none is
// 107) and by Debian's /etc/iproute2/rt_protos.
inline constexpr uint8_t kKovsRouteProtocol = 107;

struct GatewayRoute {
    IpPrefix dst;                   // e.g. the service CIDR
    std::optional<IpPrefix> via;    // next hop; none: directly on gw0 (scope link)
};

struct DesiredGatewayRoute {
    IpPrefix dst;                   // the network (host bits clear)
    std::optional<IpPrefix> via;
    std::optional<IpPrefix> src;    // preferred source (IPv4)
    uint8_t scope = RT_SCOPE_LINK;
    uint32_t priority = 0;          // the metric; 0: the kernel's default
    bool operator==(const DesiredGatewayRoute&) const = default;
};

// A unicast route of the main table with at least one next hop through gw0.
struct ObservedGatewayRoute {
    IpPrefix dst;
    std::vector<std::optional<IpPrefix>> vias;  // one per next hop through gw0; none: directly
    uint8_t protocol = RTPROT_BOOT;
};

struct GatewayRoutePlan {
    std::vector<DesiredGatewayRoute> add;
    std::vector<size_t> remove;  // indices into the observed routes
};

// `guarded`: the addresses the guard keeps (GatewayAddresses::guarded()); an
// IPv4 extra route's source is the first IPv4 one. `extra`: the routes asked for.
std::vector<DesiredGatewayRoute> desiredGatewayRoutes(const std::vector<IpPrefix>& guarded, const std::vector<GatewayRoute>& extra);

// `removeStale`: false until the full route set is known (the agent's peers
// have not arrived yet): kovs routes on gw0 no longer wanted are then kept.
GatewayRoutePlan planGatewayRoutes(const std::vector<DesiredGatewayRoute>& desired,
                                   const std::vector<ObservedGatewayRoute>& observed, bool removeStale);

}  // namespace kovs::gateway
