#pragma once
// What ovs-vswitchd currently holds for tunnelling over one bridge, read back
// from `ovs/route/show` and `tnl/neigh/show` (OVS 3.1 text output; there is
// no JSON form of either).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ovs/UnixctlClient.hpp"

namespace kovs::tunnel {

// One route's next hop as vswitchd shows it: the output bridge and, for a
// routed next hop, its gateway.
struct OvsRoute {
    std::string dev;
    std::string gateway;  // "" when on-link
    bool operator==(const OvsRoute&) const = default;
};

struct OvsTunnelState {
    // Routes added with ovs/route/add ("User:"), by prefix ("172.18.0.3/32"),
    // whatever their bridge. Routes with a pkt_mark are left out: they only
    // match marked packets and an unmarked ovs/route/add does not replace them.
    std::map<std::string, OvsRoute> userRoutes;
    std::map<std::string, std::string> neighbours;  // ip -> mac, on the bridge (set or snooped)
};

// Lines look like "User: 172.18.0.3/32 [MARK 5] dev br-phy [GW 172.18.0.1]
// SRC 172.18.0.2" and "172.18.0.3    02:42:ac:12:00:03   br-phy". Other
// lines (headers, kernel-cached routes, other bridges' neighbours) are skipped.
OvsTunnelState parseOvsTunnelState(const std::string& routeShow, const std::string& neighShow,
                                   const std::string& bridge);

// The read-back as one pipeline (ovs/route/show, tnl/neigh/show), and its
// replies parsed; throws kovs::Error naming the command that failed, or why
// vswitchd could not be asked.
std::vector<ovs::UnixctlCommand> ovsTunnelReadBack();
OvsTunnelState parseOvsTunnelReadBack(const ovs::UnixctlReplies& shown, const std::string& bridge);

}  // namespace kovs::tunnel
