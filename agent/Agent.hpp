#pragma once
// kovs-agent: wiring only. It makes one of each job from the configuration
// (agent/JobOptions), connects their triggers, and answers --once
// (--cleanup is agent/NodeCleanup). Each job owns its trigger, its status and its metrics (base/Job);
// status, /metrics and /readyz are the jobs' answers collected.
//
//   OvsSupervisor ──vswitchd restart──► flows read back (the tunnel job sees the new pid itself)
//   OvsdbClient ──monitor──► BridgeReconciler, FlowReconciler, SocketBufferSizer
//   PeerSource ──► PeerFanout ──► TunnelReconciler, FlowReconciler, GatewayGuard routes, EgressReconciler
//   netlink ──► GatewayGuard, OffloadGuard, UplinkGuard (after the uplink's migration)
//   inotify ──► NetworkdDropinGuard
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <vector>

#include "agent/CniStats.hpp"
#include "agent/Config.hpp"
#include "agent/HealthServer.hpp"
#include "agent/PeerFanout.hpp"
#include "agent/StatusServer.hpp"
#include "base/EventLoop.hpp"
#include "base/RepairLog.hpp"
#include "bridge/BridgeReconciler.hpp"
#include "egress/EgressReconciler.hpp"
#include "flows/FlowReconciler.hpp"
#include "flows/PolicyLogger.hpp"
#include "gateway/GatewayGuard.hpp"
#include "gateway/NetworkdDropinGuard.hpp"
#include "offload/OffloadGuard.hpp"
#include "daemons/OvsSupervisor.hpp"
#include "ovs/OvsdbClient.hpp"
#include "daemons/SocketBufferSizer.hpp"
#include "ovs/UnixctlClient.hpp"
#include "peers/PeerSource.hpp"
#include "policy/PolicySource.hpp"
#include "tunnel/Underlay.hpp"
#include "tunnel/TunnelReconciler.hpp"
#include "uplink/UplinkGuard.hpp"

namespace kovs::agent {

class Agent {
public:
    Agent(EventLoop& loop, Config config);
    ~Agent();
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    // Brings OVS up (when managed), converges the bridges, moves the uplink,
    // then starts every job, the status socket and the HTTP endpoints.
    // Throws kovs::Error when the node cannot be brought to a working state.
    void start();
    // --once: converges every job once; true when the node converged.
    bool runOnce();

    nlohmann::json status() const;
    std::string readiness() const;  // "" when ready
    std::string metrics() const;

private:
    void startOvs();
    void startBridges();
    void waitForDevice(const std::string& name, std::chrono::milliseconds timeout);
    void migrateUplink();
    void startJobs();
    void startPeers();
    void startServers();
    void followNarrowestPath(const tunnel::NarrowestPath& path);

    EventLoop& loop_;
    Config config_;
    std::chrono::steady_clock::time_point startedAt_ = std::chrono::steady_clock::now();
    RepairLog repairs_;
    CniStats cni_;
    int gatewayMtu_ = 0;  // what the bridge and gateway jobs keep on gw0 (followNarrowestPath)

    std::unique_ptr<daemons::OvsSupervisor> supervisor_;
    std::unique_ptr<ovs::OvsdbClient> ovsdb_;
    std::unique_ptr<bridge::BridgeReconciler> bridges_;
    std::unique_ptr<gateway::NetworkdDropinGuard> dropins_;
    std::unique_ptr<uplink::UplinkGuard> uplink_;
    std::unique_ptr<gateway::GatewayGuard> gateway_;
    std::unique_ptr<offload::OffloadGuard> offload_;
    std::unique_ptr<ovs::UnixctlClient> unixctl_;
    std::unique_ptr<tunnel::KernelUnderlay> underlay_;
    std::unique_ptr<tunnel::TunnelReconciler> tunnel_;
    std::unique_ptr<policy::PolicySource> policy_;
    std::unique_ptr<flows::FlowReconciler> flows_;
    std::unique_ptr<flows::PolicyLogger> policyLog_;
    std::unique_ptr<egress::EgressReconciler> egress_;
    std::unique_ptr<daemons::SocketBufferSizer> socketBuffers_;
    std::unique_ptr<PeerFanout> peers_;
    std::unique_ptr<peers::PeerSource> peerSource_;
    std::unique_ptr<StatusServer> statusServer_;
    std::unique_ptr<HealthServer> healthServer_;
    // Every job, in the order readiness() asks them.
    std::vector<const Job*> jobs_;
};

}  // namespace kovs::agent
