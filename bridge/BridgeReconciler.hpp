#pragma once
// Keeps OVS's bridges at kovs's desired state (BridgePlanner), level-
// triggered: every monitor update re-plans against the replica and sends
// only the difference, one transaction at a time; nothing is sent when OVS
// already matches. A port someone deletes comes back on the update that
// reports the deletion, not on a poll.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "base/RetryTimer.hpp"
#include "bridge/BridgePlanner.hpp"
#include "ovs/OvsdbClient.hpp"

namespace kovs::bridge {

class BridgeReconciler : public Job {
public:
    BridgeReconciler(EventLoop& loop, ovs::OvsdbClient& client, BridgeOptions opts);
    ~BridgeReconciler() override;
    BridgeReconciler(const BridgeReconciler&) = delete;
    BridgeReconciler& operator=(const BridgeReconciler&) = delete;

    // Subscribes to monitor updates and reconnects; reconciles on each.
    void start();
    // Requests a reconcile on the loop (periodic resync, for instance).
    void trigger();

    // The replica is current and matches the desired state, nothing in flight.
    bool converged() const;
    // For --once: runs the loop until converged; false (with lastError()) if not.
    bool reconcileOnce(std::chrono::milliseconds timeout);
    // Stops reconciling and removes every row kovs owns; runs the loop until
    // done. Throws kovs::Error.
    void cleanup(std::chrono::milliseconds timeout = std::chrono::seconds(5));

    uint64_t transactions() const { return transactions_; }
    uint64_t failures() const { return failures_; }
    const std::string& lastError() const { return lastError_; }
    const BridgePlanner& planner() const { return planner_; }
    // Sections "ovsdb" (the connection) and "bridges" (what the replica holds).
    std::string name() const override { return "bridges"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;
    std::string notReady() const override;

    // Called after each transaction that changed OVS (tests, metrics).
    void setAppliedHandler(std::function<void(const BridgePlan&)> h) { onApplied_ = std::move(h); }

private:
    void reconcile();
    // Re-plans once the replica can show our last commit (kSettle).
    void settleLater();

    EventLoop& loop_;
    ovs::OvsdbClient& client_;
    BridgePlanner planner_;
    RetryTimer retry_;  // after a failed transaction: 100 ms doubling to 5 s
    bool started_ = false;
    bool stopped_ = false;
    bool scheduled_ = false;
    bool inFlight_ = false;
    bool dirty_ = false;
    bool settling_ = false;
    EventLoop::TimerId settleTimer_ = 0;
    uint64_t transactions_ = 0;
    uint64_t failures_ = 0;
    std::string lastError_;
    std::string lastForeign_;
    std::function<void(const BridgePlan&)> onApplied_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace kovs::bridge
