#pragma once
// What one reconcile of the gateway changed, counted by its steps
// (GatewayLink, GatewaySysctls, GatewayAddresses, GatewayRoutes) as they
// go, so a pass that fails half-way still reports what it did.
#include <cstdint>

namespace kovs::gateway {

struct GatewayRepairs {
    uint64_t linkUp = 0, mtu = 0, sysctl = 0, addrAdded = 0, addrRemoved = 0, routeAdded = 0, routeRemoved = 0;
    uint64_t addrAdded6 = 0, routeAdded6 = 0;  // the IPv6 ones among addrAdded and routeAdded
    uint64_t mtuHeld = 0;  // MTU repairs the throttle held back: not a repair
    uint64_t total() const { return linkUp + mtu + sysctl + addrAdded + addrRemoved + routeAdded + routeRemoved; }
};

}  // namespace kovs::gateway
