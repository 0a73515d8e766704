#pragma once
// The gateway guard's route step: the routes through gw0 observed with
// RtnetlinkClient::routes(), planned by planGatewayRoutes
// (gateway/GatewayRoutePlan.hpp), applied as removals of stale kovs routes
// and additions of missing ones.
#include <string>
#include <vector>

#include "base/RtnetlinkClient.hpp"
#include "gateway/GatewayRepairs.hpp"
#include "gateway/GatewayRoutePlan.hpp"

namespace kovs::gateway {

void reconcileGatewayRoutes(RtnetlinkClient& nl, const std::string& link, const std::vector<RouteInfo>& desired, bool removeStale,
                            GatewayRepairs& r);

}  // namespace kovs::gateway
