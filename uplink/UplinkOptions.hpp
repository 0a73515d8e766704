#pragma once
// What the uplink job is told: which interface carries the node's underlay
// identity, the OVS bridge it moves to, and how the two are joined.
//
//   shim (default): eth0 <-tc redirect-> kovs-up0 | veth | kovs-up1 = the br-phy port
//   direct:         eth0 itself is the br-phy port (OVS's own how-to layout)
//
// docs/architecture.md ("The uplink shim") says why the shim is a tc
// redirect and not a Linux bridge.
#include <chrono>
#include <string>
#include <vector>

namespace kovs::uplink {

enum class UplinkMode { Shim, Direct };

inline std::string modeName(UplinkMode m) { return m == UplinkMode::Shim ? "shim" : "direct"; }

// The OVS port types an uplink can be: uplink.portType in the configuration.
inline const std::vector<std::string>& uplinkPortTypes() {
    static const std::vector<std::string> types{"system", "afxdp", "afxdp-nonpmd", "dpdk"};
    return types;
}

struct UplinkOptions {
    UplinkMode mode = UplinkMode::Shim;
    std::string device = "eth0";
    std::string bridge = "br-phy";
    std::string shimBridgeEnd = "kovs-up0";  // eth0's partner in the tc redirect, TX checksum off
    std::string shimOvsEnd = "kovs-up1";     // the br-phy port
    std::string portType = "system";         // one of uplinkPortTypes()
    // The record of eth0's addressing before kovs touched it. Beside the OVS
    // sockets, on a tmpfs: it describes kernel state, which a reboot resets too.
    std::string recordFile = "/run/kovs/uplink.json";
    // How long migrate() waits for ovs-vswitchd to attach the port and give
    // br-phy its MAC before it gives up and undoes what it did.
    std::chrono::milliseconds ovsTimeout{15000};

    // The OVS port that carries the uplink.
    const std::string& port() const { return mode == UplinkMode::Shim ? shimOvsEnd : device; }
    // Every device the shim mode adds to the node (networkd drop-ins, offload).
    std::vector<std::string> shimDevices() const { return {shimBridgeEnd, shimOvsEnd}; }
};

// The Linux bridge of the shim before it was a tc redirect (kovs 0.1):
// removed wherever it is found.
inline constexpr const char* kLegacyShimBridge = "kovs-shim";

}  // namespace kovs::uplink
