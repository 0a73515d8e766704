#pragma once
// What ovs-vswitchd currently holds for tunnelling over one bridge, read back
// from `ovs/route/show` and `tnl/neigh/show` (OVS 3.1 text output; there is
// no JSON form of either).
#include <map>
#include <set>
#include <string>

namespace kovs::tunnel {

struct OvsTunnelState {
    std::set<std::string> userRoutes;               // "172.18.0.3/32" added with ovs/route/add, on the bridge
    std::map<std::string, std::string> neighbours;  // ip -> mac, on the bridge (set or snooped)
};

// Lines look like "User: 172.18.0.3/32 dev br-phy SRC 172.18.0.2" and
// "172.18.0.3    02:42:ac:12:00:03   br-phy". Unknown lines are skipped:
// kernel-cached routes and other bridges are not ours.
OvsTunnelState parseOvsTunnelState(const std::string& routeShow, const std::string& neighShow,
                                   const std::string& bridge);

}  // namespace kovs::tunnel
