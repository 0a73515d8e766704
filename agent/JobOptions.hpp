#pragma once
// The agent's configuration turned into each job's options: the one place
// that knows which config key feeds which job.
#include <vector>

#include "agent/Config.hpp"
#include "base/IpPrefix.hpp"
#include "bridge/BridgePlanner.hpp"
#include "egress/EgressReconciler.hpp"
#include "flows/FlowReconciler.hpp"
#include "flows/PolicyLogger.hpp"
#include "gateway/GatewayGuard.hpp"
#include "daemons/OvsSupervisor.hpp"
#include "ovs/OvsdbClient.hpp"
#include "peers/Peer.hpp"
#include "peers/PeerFilter.hpp"
#include "tunnel/TunnelReconciler.hpp"
#include "uplink/Uplink.hpp"

namespace kovs::agent {

inline bool standalone(const Config& c) { return c.mode == Config::Mode::Standalone; }

daemons::OvsSupervisorOptions supervisorOptions(const Config& c);
// The agent's connection (with the bridge job's monitor), also doctor's dry-run input.
ovs::OvsdbClientOptions ovsdbOptions(const Config& c);
bridge::BridgeOptions bridgeOptions(const Config& c);
// With the uplink's OVS side (its port and br-phy's MAC), which the uplink job
// derives from what the node and OVSDB hold now: what the bridge job keeps.
bridge::BridgeOptions bridgeOptions(const Config& c, const ovs::OvsdbReplica& replica);
uplink::UplinkOptions uplinkOptions(const Config& c);
// Without the peers' routes: they join as peers arrive (gatewayRoutes).
gateway::GatewayGuardOptions gatewayOptions(const Config& c);
// The gateway's routes, as the agent hands them to its guard and doctor
// checks them: gateway.extraRoutes, and with `peers` (standalone mode) their
// pod CIDRs of the families gw0 has an address of: the node kernel reaches
// remote pods through gw0, whose flows answer its ARP and tunnel the packets.
std::vector<RouteInfo> gatewayRoutes(const Config& c, const peers::PeerSet* peers = nullptr);
// The tunnel job (ovs/route + tnl/neigh per peer) runs on the bridge that
// holds the node IP: kovs's br-phy, or with uplink.mode none a bridge the
// other CNI owns, named as bridge.physical (OVN-Kubernetes' breth0).
bool tunnelJobWanted(const Config& c);
tunnel::TunnelReconcilerOptions tunnelOptions(const Config& c);
flows::FlowReconcilerOptions flowOptions(const Config& c);
flows::PolicyLoggerOptions policyLogOptions(const Config& c);
peers::PeerFilterOptions peerFilterOptions(const Config& c);
egress::EgressOptions egressOptions(const Config& c);
// Where this node's underlay addresses live: the uplink interface, and br-phy
// once the uplink moved there (not with uplink.mode none).
std::vector<std::string> nodeAddressDevices(const Config& c);
// The devices whose TX checksum offload the offload guard keeps off.
std::vector<std::string> offloadHostDevices(const Config& c);

}  // namespace kovs::agent
