#pragma once
// The gateway guard's route step: the routes through gw0, observed from one
// dump of the main table, planned by planGatewayRoutes
// (gateway/GatewayRoutePlan.hpp), applied as removals of stale kovs routes
// and additions of missing ones.
#include <string>
#include <vector>

#include "gateway/GatewayRepairs.hpp"
#include "gateway/GatewayRoutePlan.hpp"

struct nl_sock;

namespace kovs::gateway {

class GatewayRoutes {
public:
    explicit GatewayRoutes(std::string name) : name_(std::move(name)) {}

    void reconcile(nl_sock* sock, int ifindex, const std::vector<DesiredGatewayRoute>& desired, bool removeStale,
                   GatewayRepairs& r);

private:
    std::string name_;
};

}  // namespace kovs::gateway
