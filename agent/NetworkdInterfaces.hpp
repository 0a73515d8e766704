#pragma once
// The interfaces kovs configures on a node, which systemd-networkd must leave
// alone (NetworkdDropins): the agent writes a drop-in for each, doctor checks
// that each has one. That includes the uplink once kovs has moved its
// addresses to br-phy: a networkd that manages eth0 (a catch-all .network)
// reconfigures it as if it still were the node's interface (it took eth0
// out of the Linux bridge of the first shim and cut the node off, seen in
// the e2e networkd scenario), and the shim's own veth ends. In standalone
// mode also the host ends of kovs-cni's pod veths (one drop-in for all): a
// networkd that manages them turns their IPv6 back on, which kovs keeps off
// (base/LinkIsolation.hpp), and the e2e networkd scenario's catch-all did.
#include <string>
#include <vector>

#include "agent/Config.hpp"
#include "gateway/NetworkdDropins.hpp"
#include "uplink/UplinkOptions.hpp"

namespace kovs::agent {

// kovs-cni names a pod's host end "kovs" + 11 hex digits
// (cni/VethPair::hostNameFor; unit_agent holds the two together).
inline const gateway::NetworkdLink kPodHostEnds{"pods", "kovs[0-9a-f]*", "kovs0123456789a"};

inline std::vector<gateway::NetworkdLink> networkdDropinInterfaces(const Config& config) {
    std::vector<gateway::NetworkdLink> names{config.bridge.gateway};
    if (config.mode == Config::Mode::Standalone) names.push_back(kPodHostEnds);
    if (config.uplink.mode == Config::UplinkMode::None) return names;
    names.insert(names.end(), {config.bridge.physical, config.uplink.interface});
    if (config.uplink.mode == Config::UplinkMode::Shim) {
        for (const auto& d : uplink::UplinkOptions().shimDevices()) names.push_back(d);  // fixed names
    }
    return names;
}

}  // namespace kovs::agent
