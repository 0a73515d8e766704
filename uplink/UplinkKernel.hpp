#pragma once
// The uplink job's I/O: looks at the node (rtnetlink, tc, ethtool, the
// record, the agent's OVSDB replica) and carries out one step at a time.
#include "base/Ethtool.hpp"
#include "base/RtnetlinkClient.hpp"
#include "ovs/OvsdbReplica.hpp"
#include "uplink/UplinkPlanner.hpp"

namespace kovs::uplink {

class UplinkKernel {
public:
    explicit UplinkKernel(UplinkOptions opts);

    // `replica` may be null (--cleanup, which must work without OVSDB).
    UplinkObserved observe(const ovs::OvsdbReplica* replica);
    // Throws kovs::Error naming the step.
    void apply(const UplinkAction& action);

private:
    UplinkOptions opts_;
    RtnetlinkClient rtnl_;
    Ethtool ethtool_;
};

// What the replica says about the uplink's port and br-phy.
UplinkOvsView ovsViewOf(const UplinkOptions& opts, const ovs::OvsdbReplica& replica);

}  // namespace kovs::uplink
