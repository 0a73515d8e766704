#pragma once
// kovs-agent: owns one instance of each reconciler, wires them to the event
// loop, and answers --once and --cleanup. Each reconciler is level-triggered:
// events make it look sooner, the periodic resync makes sure it looks at all.
//
//   OvsSupervisor ──restart──► tunnel re-program, flows re-install
//   OvsdbClient ──monitor──► BridgeReconciler, FlowTable (pod ports, ofports)
//   PeerSource ──peers──► TunnelReconciler, FlowTable, gateway routes
//   netlink ──► GatewayGuard;  link events + resync ──► offload sweep
#include <nlohmann/json.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>

#include "agent/Config.hpp"
#include "gateway/GatewayGuard.hpp"
#include "agent/HealthServer.hpp"
#include "agent/CniStats.hpp"
#include "agent/Metrics.hpp"
#include "agent/StatusServer.hpp"
#include "base/EventLoop.hpp"
#include "base/RetryTimer.hpp"
#include "bridge/BridgeReconciler.hpp"
#include "flows/FlowTable.hpp"
#include "ovs/OvsSupervisor.hpp"
#include "ovs/OvsdbClient.hpp"
#include "ovs/UnixctlClient.hpp"
#include "offload/OffloadGuard.hpp"
#include "tunnel/NeighbourTable.hpp"
#include "peers/PeerSource.hpp"
#include "tunnel/TunnelReconciler.hpp"
#include "uplink/Uplink.hpp"

namespace kovs {

class Agent {
public:
    Agent(EventLoop& loop, Config config);
    ~Agent();
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    // Brings OVS up (when managed), converges the bridges, moves the uplink,
    // then starts every reconciler, the status socket and the HTTP endpoints.
    // Throws kovs::Error when the node cannot be brought to a working state.
    void start();
    // --once: converges every reconciler once; true when the node converged.
    bool runOnce();
    // --cleanup: removes what kovs created (owned OVS rows, drop-ins, uplink
    // migration) and restores the node's original addressing.
    void cleanup();

    nlohmann::json status() const;
    std::string readiness() const;  // "" when ready
    std::string metrics() const;

private:
    void startOvs();
    void convergeBridges();
    void waitForDevice(const std::string& name, std::chrono::milliseconds timeout);
    void migrateUplink();
    void startGateway();
    void startOffload();
    void startTunnel();
    void startPeers();
    void onPeers(const tunnel::PeerSet& peers);
    void reconcileFlows(bool force);
    void sizeSocketBuffers();
    void resync();
    void recordRepair(const std::string& kind, const std::string& detail);
    GatewayGuardOptions gatewayOptions() const;
    tunnel::UplinkOptions uplinkOptions() const;
    BridgeOptions bridgeOptions() const;
    bool standalone() const { return config_.mode == Config::Mode::Standalone; }

    EventLoop& loop_;
    Config config_;
    std::chrono::steady_clock::time_point startedAt_ = std::chrono::steady_clock::now();

    std::unique_ptr<OvsSupervisor> supervisor_;
    std::unique_ptr<OvsdbClient> ovsdb_;
    std::unique_ptr<BridgeReconciler> bridges_;
    std::optional<GatewayGuard> gateway_;
    std::unique_ptr<offload::OffloadGuard> offload_;
    std::unique_ptr<UnixctlClient> unixctl_;
    std::unique_ptr<tunnel::KernelNeighbourTable> neighbours_;
    std::unique_ptr<tunnel::TunnelReconciler> tunnel_;
    std::unique_ptr<tunnel::PeerSource> peerSource_;
    std::unique_ptr<FlowTable> flows_;
    std::unique_ptr<StatusServer> statusServer_;
    std::unique_ptr<HealthServer> healthServer_;

    tunnel::PeerSet peers_;
    bool peersKnown_ = false;
    std::string flowError_;
    std::vector<std::string> flowSkippedLogged_;
    uint64_t flowInstalls_ = 0;
    // A forced install that failed (vswitchd restarted, ports without an
    // ofport yet) is retried: 200 ms, doubling to 10 s while it keeps failing.
    RetryTimer flowRetry_{loop_, std::chrono::milliseconds(200), std::chrono::seconds(10), [this] { reconcileFlows(true); }};
    uint64_t socketBufferResizes_ = 0;
    std::string socketBufferError_;
    LatencyHistogram gatewayRestoreLatency_;
    CniStats cniStats_;
    std::map<std::string, uint64_t> repairs_;
    struct Repair {
        std::string time;
        std::string kind;
        std::string detail;
    };
    std::deque<Repair> recentRepairs_;
};

}  // namespace kovs
