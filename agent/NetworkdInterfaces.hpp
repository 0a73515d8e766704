#pragma once
// The interfaces kovs configures on a node, which systemd-networkd must leave
// alone (NetworkdDropins): the agent writes a drop-in for each, doctor checks
// that each has one. That includes the uplink once kovs has moved its
// addresses to br-phy: a networkd that manages eth0 (a catch-all .network)
// reconfigures it as if it still were the node's interface (it took eth0
// out of the Linux bridge of the first shim and cut the node off, seen in
// the e2e networkd scenario), and the shim's own veth ends.
#include <string>
#include <vector>

#include "agent/Config.hpp"
#include "uplink/UplinkOptions.hpp"

namespace kovs::agent {

inline std::vector<std::string> networkdDropinInterfaces(const Config& config) {
    std::vector<std::string> names{config.bridge.gateway};
    if (config.uplink.mode == Config::UplinkMode::None) return names;
    names.insert(names.end(), {config.bridge.physical, config.uplink.interface});
    if (config.uplink.mode == Config::UplinkMode::Shim) {
        for (const auto& d : uplink::UplinkOptions().shimDevices()) names.push_back(d);  // fixed names
    }
    return names;
}

}  // namespace kovs::agent
