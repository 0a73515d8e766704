#pragma once
// The uplink job: the node's underlay identity (addresses, routes, MAC) moves
// from eth0 to br-phy so OVS's userspace datapath can route and resolve
// tunnel traffic itself, and comes back on --cleanup.
//
//   desired   UplinkPlanner::desire   options + eth0 (or the record, or br-phy)
//   observed  UplinkKernel::observe   rtnetlink, tc, ethtool, the record, OVSDB replica
//   plan      UplinkPlanner           steps, each with its undo (pure, unit-tested)
//   apply     Uplink::migrate         steps in order; any failure undoes them all
//
// The OVS side (the uplink port, br-phy's other_config:hwaddr) is not
// written here: it is part of br-phy's desired state in the bridge job
// (ovsSide() -> BridgeOptions::uplink), which repairs it continuously and
// adopts what an older kovs left in a database that survived a reboot.
#include <chrono>
#include <functional>

#include "ovs/OvsdbReplica.hpp"
#include "uplink/UplinkKernel.hpp"
#include "uplink/UplinkOptions.hpp"
#include "uplink/UplinkPlanner.hpp"

namespace kovs::uplink {

class Uplink {
public:
    enum class Outcome { Migrated, AlreadyMigrated };

    explicit Uplink(UplinkOptions opts);

    // The port and MAC br-phy must have. Throws kovs::Error when the port
    // type is unknown or this ovs-vswitchd cannot do it, or eth0 is missing.
    UplinkOvsSide ovsSide(const ovs::OvsdbReplica& replica);
    // Observes, plans and applies until the node is migrated. `replica` must
    // stay current meanwhile: `idle` is called while waiting for OVS (the
    // agent runs its loop there). On failure every applied step is undone
    // and kovs::Error names the step; the node keeps its address either way.
    Outcome migrate(const ovs::OvsdbReplica& replica, const std::function<void()>& idle);
    // Restores eth0's addressing (from the record, else from br-phy) and
    // removes the shim; works without OVSDB. Returns whether anything changed;
    // throws when an address could not be put back (the record is kept).
    bool cleanup();
    // The plan migrate() would start with (a dry run, for doctor).
    UplinkPlan plan(const ovs::OvsdbReplica& replica);

    const UplinkOptions& options() const { return opts_; }

private:
    UplinkOptions opts_;
    UplinkKernel kernel_;
};

}  // namespace kovs::uplink
