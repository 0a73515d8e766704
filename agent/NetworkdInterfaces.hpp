#pragma once
// The interfaces kovs configures on a node, which systemd-networkd must leave
// alone (NetworkdDropins): the agent writes a drop-in for each, doctor checks
// that each has one. That includes the uplink once kovs has moved its
// addresses to br-phy: a networkd that manages eth0 (a catch-all .network)
// takes it out of the shim bridge, because that .network names no master, and
// the node is cut off (seen in the e2e networkd scenario).
#include <string>
#include <vector>

#include "agent/Config.hpp"
#include "uplink/Uplink.hpp"

namespace kovs {

inline std::vector<std::string> networkdDropinInterfaces(const Config& config) {
    std::vector<std::string> names{config.bridge.gateway};
    if (config.uplink.mode == Config::UplinkMode::None) return names;
    names.insert(names.end(), {config.bridge.physical, config.uplink.interface});
    if (config.uplink.mode == Config::UplinkMode::Shim) {
        tunnel::UplinkOptions shim;  // the shim's device names are fixed
        names.insert(names.end(), {shim.shimBridge, shim.shimVethBridgeEnd, shim.shimVethOvsEnd});
    }
    return names;
}

}  // namespace kovs
