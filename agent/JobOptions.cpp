#include "agent/JobOptions.hpp"

#include <algorithm>

namespace kovs::agent {
namespace {

// Companion mode without gateway.addresses: none, the guard keeps what the
// other CNI gave its device (OVN-K's management port is .2 of the node
// subnet, Kube-OVN's ovn0 on a join subnet: the pod CIDR's first address is
// only Antrea's convention).
std::vector<IpPrefix> gatewayAddresses(const Config& c) {
    if (!c.gateway.addresses.empty()) return c.gateway.addresses;
    std::vector<IpPrefix> out;
    if (standalone(c)) {
        for (const auto& p : c.node.podCIDRs) out.push_back(gatewayAddressFor(p));
    }
    return out;
}

}  // namespace

daemons::OvsSupervisorOptions supervisorOptions(const Config& c) {
    daemons::OvsSupervisorOptions o;
    o.rundir = c.ovs.rundir;
    o.dbPath = c.ovs.database;
    o.schemaPath = c.ovs.schema;
    o.keepRunningOnExit = true;  // an agent restart must not take the datapath down
    return o;
}

ovs::OvsdbClientOptions ovsdbOptions(const Config& c) {
    ovs::OvsdbClientOptions o;
    o.remote = c.ovsdbRemote();
    return o;
}

bridge::BridgeOptions bridgeOptions(const Config& c) {
    bridge::BridgeOptions o;
    o.integrationBridge = c.bridge.integration;
    // uplink.mode none: a physical bridge, if named, is the other CNI's.
    o.physBridge = c.uplink.mode == Config::UplinkMode::None ? "" : c.bridge.physical;
    // Companion: the gateway is the other CNI's, guarded once it exists, never made.
    o.gatewayPort = standalone(c) ? c.bridge.gateway : "";
    if (standalone(c) && c.gatewayMtu() > 0) o.gatewayMtu = c.gatewayMtu();
    o.tunnelPort = c.tunnelPort();
    o.tunnelDstPort = c.bridge.tunnelDstPort;
    o.createIntegrationBridge = standalone(c);
    // Standalone: only kovs's flows forward on br-int. Companion: the other CNI owns br-int's mode.
    if (standalone(c)) o.failMode = "secure";
    return o;
}

bridge::BridgeOptions bridgeOptions(const Config& c, const ovs::OvsdbReplica& replica) {
    auto o = bridgeOptions(c);
    if (c.uplink.mode != Config::UplinkMode::None) {
        auto side = uplink::Uplink(uplinkOptions(c)).ovsSide(replica);
        o.uplink = bridge::BridgeUplinkPort{side.port, side.type, side.hwaddr};
    }
    return o;
}

uplink::UplinkOptions uplinkOptions(const Config& c) {
    uplink::UplinkOptions o;
    o.mode = c.uplink.mode == Config::UplinkMode::Direct ? uplink::UplinkMode::Direct : uplink::UplinkMode::Shim;
    o.device = c.uplink.interface;
    o.bridge = c.bridge.physical;
    o.portType = c.uplink.portType;
    // Next to the OVS sockets: per node, kept across agent restarts, gone
    // with a reboot, like the kernel state it records.
    o.recordFile = c.ovs.rundir + "/kovs-uplink.json";
    return o;
}

gateway::GatewayGuardOptions gatewayOptions(const Config& c) {
    gateway::GatewayGuardOptions o;
    o.enabled = c.gateway.guard;
    o.name = c.bridge.gateway;
    o.mtu = c.gatewayMtu() > 0 ? std::optional<int>(c.gatewayMtu()) : std::nullopt;
    o.addresses = gatewayAddresses(c);
    o.adoptAddresses = o.addresses.empty() && !standalone(c);
    o.serviceSysctls = standalone(c);
    o.routes = gatewayRoutes(c);
    // Peer pod-CIDR routes join once the peers are known.
    o.routesComplete = !standalone(c) || c.peers.source == Config::PeerSourceKind::None;
    o.resyncInterval = c.gateway.resync;
    return o;
}

std::vector<RouteInfo> gatewayRoutes(const Config& c, const peers::PeerSet* peers) {
    std::vector<RouteInfo> routes;
    for (const auto& r : c.gateway.extraRoutes) routes.push_back({.dst = r});
    if (!peers || !standalone(c)) return routes;
    const auto served = gatewayAddresses(c);
    for (const auto& [_, p] : *peers) {
        for (const auto& cidr : p.podCIDRs) {
            if (std::any_of(served.begin(), served.end(), [&](const IpPrefix& g) { return g.family == cidr.family; }))
                routes.push_back({.dst = cidr});
        }
    }
    return routes;
}

bool tunnelJobWanted(const Config& c) {
    return c.uplink.mode != Config::UplinkMode::None || c.bridge.physicalConfigured;
}

tunnel::TunnelReconcilerOptions tunnelOptions(const Config& c) {
    tunnel::TunnelReconcilerOptions o;
    o.bridge = c.bridge.physical;
    o.resync = c.resync;
    o.waitForPeers = c.peers.source != Config::PeerSourceKind::None;
    return o;
}

flows::FlowReconcilerOptions flowOptions(const Config& c) {
    flows::FlowReconcilerOptions o;
    o.bridge = c.bridge.integration;
    o.rundir = c.ovs.rundir;
    o.gatewayPort = c.bridge.gateway;
    o.tunnelPort = c.bridge.tunnel;
    o.gatewayAddresses = gatewayAddresses(c);
    o.serviceReplyPath = c.flows.conntrack;
    o.serviceCIDRs = c.cluster.serviceCIDRs;
    o.waitForPolicy = c.enforcesPolicy();
    o.waitForPeers = c.peers.source != Config::PeerSourceKind::None;
    o.ofctlTimeout = c.flows.ofctlTimeout;
    o.readBack = c.resync;
    return o;
}

flows::PolicyLoggerOptions policyLogOptions(const Config& c) {
    flows::PolicyLoggerOptions o;
    o.socketPath = c.ovs.rundir + "/" + c.bridge.integration + ".mgmt";
    o.ratePktps = static_cast<uint32_t>(c.networkPolicy.logRate);
    o.entries = static_cast<size_t>(c.networkPolicy.logEntries);
    return o;
}

peers::PeerFilterOptions peerFilterOptions(const Config& c) {
    peers::PeerFilterOptions o;
    o.self = c.node.name;
    for (const auto& p : c.node.podCIDRs) appendUnique(o.localPodCidrs, p);
    for (const auto& a : gatewayAddresses(c)) appendUnique(o.localPodCidrs, a.network());
    o.serviceCidrs = c.cluster.serviceCIDRs;
    return o;
}

egress::EgressOptions egressOptions(const Config& c) {
    egress::EgressOptions o;
    o.clusterCidrs = c.egress.clusterCIDRs;
    o.nonMasquerade = c.egress.nonMasqueradeCIDRs;
    o.localPodCidrs = peerFilterOptions(c).localPodCidrs;
    o.nodeAddressDevices = nodeAddressDevices(c);
    o.resync = c.resync;
    return o;
}

std::vector<std::string> nodeAddressDevices(const Config& c) {
    std::vector<std::string> devices{c.uplink.interface};
    if (c.uplink.mode != Config::UplinkMode::None) devices.push_back(c.bridge.physical);
    return devices;
}

std::vector<std::string> offloadHostDevices(const Config& c) {
    std::vector<std::string> devices{c.bridge.gateway};
    if (c.uplink.mode != Config::UplinkMode::None) devices.push_back(c.bridge.physical);
    if (c.uplink.mode == Config::UplinkMode::Shim) devices.push_back(uplinkOptions(c).shimBridgeEnd);
    return devices;
}

}  // namespace kovs::agent
