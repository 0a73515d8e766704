#include "agent/NodeCleanup.hpp"

#include <spdlog/spdlog.h>

#include "agent/JobOptions.hpp"
#include "agent/NetworkdInterfaces.hpp"
#include "bridge/BridgeReconciler.hpp"
#include "egress/NftablesNat.hpp"
#include "gateway/NetworkdDropins.hpp"
#include "ovs/OvsdbClient.hpp"
#include "uplink/Uplink.hpp"

namespace kovs::agent {

void cleanupNode(EventLoop& loop, const Config& config) {
    gateway::NetworkdDropins(config.gateway.networkdDropinDir).remove(networkdDropinInterfaces(config));
    if (standalone(config)) egress::NftablesNat().remove();
    if (config.uplink.mode != Config::UplinkMode::None && uplink::Uplink(uplinkOptions(config)).cleanup())
        spdlog::info("uplink: original addressing of {} restored", config.uplink.interface);
    ovs::OvsdbClient ovsdb(loop, ovsdbOptions(config));
    ovsdb.start();
    if (ovsdb.waitReady(std::chrono::seconds(5))) {
        bridge::BridgeReconciler(loop, ovsdb, bridgeOptions(config)).cleanup();
    } else {
        spdlog::warn("ovsdb {} not reachable: OVS rows left as they are", config.ovsdbRemote());
    }
    spdlog::info("kovs-agent cleanup done");
}

}  // namespace kovs::agent
