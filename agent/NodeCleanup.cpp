#include "agent/NodeCleanup.hpp"

#include <spdlog/spdlog.h>

#include "agent/JobOptions.hpp"
#include "agent/NetworkdInterfaces.hpp"
#include "base/RtnetlinkClient.hpp"
#include "bridge/BridgeReconciler.hpp"
#include "egress/NftablesNat.hpp"
#include "gateway/NetworkdDropins.hpp"
#include "ovs/OvsdbClient.hpp"
#include "uplink/Uplink.hpp"

namespace kovs::agent {
namespace {

// The OVS DB cannot be reached: ovs-vswitchd is gone with the DaemonSet, and
// the tap devices of its netdev bridges stay behind (gw0 still holding its
// pod CIDR address and routes). Only taps of the names the config gives
// kovs's bridges are removed, and only in standalone mode, where no other
// CNI's OVS uses them.
void removeLeftoverTaps(const Config& config) {
    if (!standalone(config)) return;
    RtnetlinkClient nl;
    for (const auto& name : {config.bridge.integration, config.bridge.physical, config.bridge.gateway,
                             std::string("ovs-netdev")}) {
        auto link = nl.link(name);
        if (!link) continue;
        if (link->kind != "tun") {
            spdlog::warn("{} is not a tap device ({}): not kovs's, left as it is", name,
                         link->kind.empty() ? "a plain device" : link->kind);
            continue;
        }
        nl.deleteLink(name);
        spdlog::info("removed the tap device {} that ovs-vswitchd left behind", name);
    }
}

}  // namespace

void cleanupNode(EventLoop& loop, const Config& config) {
    gateway::NetworkdDropins(config.gateway.networkdDropinDir).remove(networkdDropinInterfaces(config));
    if (standalone(config)) {
        egress::NftablesNat(AF_INET).remove();
        egress::NftablesNat(AF_INET6).remove();
    }
    if (config.uplink.mode != Config::UplinkMode::None && uplink::Uplink(uplinkOptions(config)).cleanup())
        spdlog::info("uplink: original addressing of {} restored", config.uplink.interface);
    ovs::OvsdbClient ovsdb(loop, ovsdbOptions(config));
    ovsdb.start();
    if (ovsdb.waitReady(std::chrono::seconds(5))) {
        bridge::BridgeReconciler(loop, ovsdb, bridgeOptions(config)).cleanup();
    } else {
        spdlog::warn("ovsdb {} not reachable: OVS rows left as they are", config.ovsdbRemote());
        removeLeftoverTaps(config);
    }
    spdlog::info("kovs-agent cleanup done");
}

}  // namespace kovs::agent
