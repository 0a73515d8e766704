#pragma once
// Moves the node's underlay identity (addresses, routes, MAC) from eth0 to
// br-phy so OVS's userspace datapath can route and resolve tunnel traffic.
//
//   shim (default): eth0 -> Linux bridge kovs-shim <- veth kovs-up0 | kovs-up1 -> br-phy
//     TX checksum off on kovs-up0 and br-phy; br-phy takes eth0's MAC (the
//     node's IP<->MAC binding never changes) and eth0 gets a locally
//     administered one, because a Linux bridge keeps frames for its ports'
//     own MACs to itself (with equal MACs the tunnel's ARP never completes).
//   direct: eth0 itself is the br-phy port (OVS how-to layout); br-phy takes
//     eth0's MAC too; the host-side veth then needs TX offload off.
//
// migrate() is transactional: every step registers its undo, and any failure
// unwinds them in reverse, so the node keeps its address. The original state
// is written to `stateFile` *before* the first change, so cleanup() works
// after an agent restart or a crash, and a second migrate() on a migrated
// node changes nothing.
//
// Links, addresses and routes are changed with iproute2 (argv vectors, no
// shell), and br-phy's port and hwaddr over OVSDB (UplinkOvsdb): reading
// them back as `ip -j` JSON is exactly what cleanup() must reproduce.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kovs::tunnel {

enum class UplinkMode { Shim, Direct };

struct UplinkOptions {
    UplinkMode mode = UplinkMode::Shim;
    std::string device = "eth0";
    std::string bridge = "br-phy";
    std::string shimBridge = "kovs-shim";
    std::string shimVethBridgeEnd = "kovs-up0";  // in kovs-shim, TX checksum off
    std::string shimVethOvsEnd = "kovs-up1";     // the br-phy port
    std::string portType = "system";             // system | afxdp | afxdp-nonpmd | dpdk
    std::string stateFile = "/run/kovs/uplink.json";
    std::string ovsdb = "unix:/var/run/openvswitch/db.sock";
};

class Uplink {
public:
    enum class Outcome { Migrated, AlreadyMigrated };

    explicit Uplink(UplinkOptions opts);

    // Throws kovs::Error naming the failed step after rolling back.
    Outcome migrate();
    // Restores the original addressing, routes and MAC from the state file
    // and removes what migrate() created. No state file: nothing to do.
    // Returns whether anything was restored.
    bool cleanup();
    bool migrated() const;

    static std::string modeName(UplinkMode m) { return m == UplinkMode::Shim ? "shim" : "direct"; }

private:
    nlohmann::json snapshot() const;
    void checkPortType() const;

    UplinkOptions opts_;
};

// eth0's replacement MAC in shim mode: locally administered, unicast, never
// equal to the original.
std::string shimDeviceMac(const std::string& originalMac);

}  // namespace kovs::tunnel
