#include "gateway/GatewayRoutes.hpp"

#include <sys/socket.h>

namespace kovs::gateway {

void reconcileGatewayRoutes(RtnetlinkClient& nl, const std::string& link, const std::vector<RouteInfo>& desired, bool removeStale,
                            GatewayRepairs& r) {
    auto plan = planGatewayRoutes(desired, nl.routes(link), removeStale);
    for (const auto& stale : plan.remove) {
        nl.deleteRoute(link, stale);
        ++r.routeRemoved;
    }
    for (const auto& missing : plan.add) {
        if (!nl.addRoute(link, missing)) continue;
        ++r.routeAdded;
        if (missing.family() == AF_INET6) ++r.routeAdded6;
    }
}

}  // namespace kovs::gateway
