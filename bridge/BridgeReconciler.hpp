#pragma once
// Keeps OVS's bridges at kovs's desired state (BridgePlanner), level-
// triggered: every monitor update re-plans against the replica and sends
// only the difference, one transaction at a time; nothing is sent when OVS
// already matches. A port someone deletes comes back on the update that
// reports the deletion, not on a poll. Passes, retries and the periodic
// resync are the job's ReconcileEngine's.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "base/ReconcileEngine.hpp"
#include "bridge/BridgePlanner.hpp"
#include "ovs/OvsdbClient.hpp"

namespace kovs::bridge {

class BridgeReconciler : public Job {
public:
    BridgeReconciler(EventLoop& loop, ovs::OvsdbClient& client, BridgeOptions opts,
                     std::chrono::milliseconds resync = std::chrono::seconds(30));
    ~BridgeReconciler() override;
    BridgeReconciler(const BridgeReconciler&) = delete;
    BridgeReconciler& operator=(const BridgeReconciler&) = delete;

    // Subscribes to monitor updates and reconnects; reconciles on each.
    void start();
    // Requests a reconcile on the loop.
    void trigger() { engine_.trigger(); }
    // A new mtu_request for the gateway port (the agent follows the narrowest
    // path to the peers), applied by the next pass. Throws kovs::Error when
    // out of range, changing nothing.
    void setGatewayMtu(int mtu);

    // The replica is current and matches the desired state, nothing in flight.
    bool converged() const;
    // For --once: runs the loop until converged; false (with lastError()) if not.
    bool reconcileOnce(std::chrono::milliseconds timeout);
    // Stops reconciling and removes every row kovs owns; runs the loop until
    // done. Throws kovs::Error.
    void cleanup(std::chrono::milliseconds timeout = std::chrono::seconds(5));

    uint64_t transactions() const { return transactions_; }
    uint64_t failures() const { return engine_.failures(); }
    // The last failed transaction's error, or after a reconcileOnce() that
    // timed out, what was not converged.
    std::string lastError() const;
    const BridgePlanner& planner() const { return planner_; }
    // Sections "ovsdb" (the connection) and "bridges" (what the replica holds).
    std::string name() const override { return "bridges"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;
    std::string notReady() const override;

    // The device of `port` was deleted and made again (the uplink job rebuilt
    // the shim's veth): ovs-vswitchd's userspace datapath keeps reading the
    // old one and never opens the new one (measured on OVS 3.1; neither does
    // a transaction that deletes and re-adds the port in one go). So the port
    // goes out in one transaction that asks vswitchd to report back
    // (Open_vSwitch next_cfg), and the next pass puts it back as the plan has
    // it once vswitchd applied the removal (cur_cfg caught up).
    void reattach(const std::string& port);

    // Called after each transaction that changed OVS (tests, metrics).
    void setAppliedHandler(std::function<void(const BridgePlan&)> h) { onApplied_ = std::move(h); }

private:
    void pass(ReconcileEngine::Done done);
    // The first half of reattach(): true when it took the pass.
    bool detach(const ReconcileEngine::Done& done);

    EventLoop& loop_;
    ovs::OvsdbClient& client_;
    BridgePlanner planner_;
    bool started_ = false;
    // After our own commit, until the replica shows it (or kSettle passed):
    // a re-plan meanwhile would repeat the commit.
    std::optional<EventLoop::Clock::time_point> settlingUntil_;
    uint64_t transactions_ = 0;
    std::string notConverged_;
    std::string lastForeign_;
    std::string reattach_;                // a port to take out and put back
    std::optional<int64_t> reattachCfg_;  // the next_cfg its removal asked vswitchd to reach
    std::function<void(const BridgePlan&)> onApplied_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    ReconcileEngine engine_;  // after a failed transaction: 100 ms doubling to 5 s
};

}  // namespace kovs::bridge
