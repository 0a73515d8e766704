#pragma once
// The one reconcile loop every job of the agent runs on. A job supplies one
// pass (observe -> plan -> apply, synchronous or finished later from an OVS
// reply); the engine owns everything about when and how often it runs:
//
//   triggers    trigger() from events (netlink, OVSDB, peers), coalesced:
//               triggers that arrive while one is pending share it; a
//               sooner one moves it up.
//   one pass    at a time: a trigger during a pass runs one more right after.
//   resync      a full pass every `resync`, whatever the last pass did.
//   backoff     a failed pass (an error reported, or anything it throws) is
//               retried after retryMin, doubling to retryMax; a clean pass
//               resets it. A throw is a failed pass, never the end of the
//               job's repairs.
//   throttle    admitRepair(): a repair of drift (someone changed a value
//               behind the job's back) goes at once `repairBurst` times per
//               window, then waits longer each time, and the job is reported
//               contested: a guard that keeps repairing the same thing backs
//               off and says so, never spins.
//   reporting   the last error, logged when it first appears or changes (after
//               `quietFailures` in a row) and when it clears; passes,
//               failures, held repairs and contested in status and metrics.
//
// Passes are either quick (an input changed: the job may trust what it
// installed last) or full (start, resync, retry, requestFull: read everything
// back). The counters and lastError() may be read from another thread;
// everything else runs on the loop's thread.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/EventLoop.hpp"
#include "base/Metrics.hpp"
#include "base/RepairThrottle.hpp"
#include "base/RetryTimer.hpp"

namespace kovs {

struct ReconcileOptions {
    std::string job;  // the log prefix and the metrics' job label: "egress", "flows", ...
    // A full pass at least this often (0: none).
    std::chrono::milliseconds resync{std::chrono::seconds(30)};
    // Triggers within this share one pass.
    std::chrono::milliseconds coalesce{0};
    // After a failed pass: the first retry, doubling to the last.
    std::chrono::milliseconds retryMin{200};
    std::chrono::milliseconds retryMax{std::chrono::seconds(10)};
    // A failure is logged once this many passes in a row failed (a flush
    // racing a repair fails one or two passes; only a streak is news).
    unsigned quietFailures = 1;
    // admitRepair(): this many per window at once, then waits from repairFirst doubling to repairMax.
    unsigned repairBurst = 5;
    std::chrono::milliseconds repairWindow{std::chrono::seconds(60)};
    std::chrono::milliseconds repairFirst{std::chrono::seconds(1)};
    std::chrono::milliseconds repairMax{std::chrono::minutes(5)};
};

class ReconcileEngine {
public:
    // How a pass ended. `incomplete`: no error, but the state is not there yet
    // (a peer's MAC unresolved): retried with backoff like a failure, not
    // reported as one.
    struct Result {
        std::string error;
        bool incomplete = false;
        static Result ok() { return {}; }
        static Result failed(std::string why) { return {std::move(why), false}; }
        static Result notYet() { return {"", true}; }
    };
    // Ends the pass; call exactly once (later calls are ignored).
    using Done = std::function<void(Result)>;
    // One pass. `full`: read back everything, trust nothing installed before.
    using Pass = std::function<void(bool full, Done done)>;

    ReconcileEngine(EventLoop& loop, ReconcileOptions opts, Pass pass);
    ~ReconcileEngine();
    ReconcileEngine(const ReconcileEngine&) = delete;
    ReconcileEngine& operator=(const ReconcileEngine&) = delete;

    // A first full pass now, then the periodic resync. Triggers before start()
    // are ignored: the first pass sees what they announced.
    void start();
    // No more passes (a pass in flight still ends; its Done is ignored).
    void stop();
    bool started() const { return started_; }

    // A pass after `delay` (the options' coalesce by default).
    void trigger(std::optional<std::chrono::milliseconds> delay = std::nullopt);
    // A full pass after `delay`.
    void requestFull(std::chrono::milliseconds delay = std::chrono::milliseconds(0));
    // A pass now, on this call's stack, unless one is in flight (then right after it).
    void runNow(bool full = true);
    // The state changed in a way that makes the last failures moot (a new
    // vswitchd): the next retry starts at retryMin again.
    void resetBackoff() { retry_.succeeded(); }

    // Inside a pass, before repairing drift: true when the repair may go now;
    // false when it is held back (the engine runs a pass when the wait is
    // over, and that pass's admitRepair() returns true).
    bool admitRepair(const std::string& what);

    bool passInFlight() const { return inFlight_; }
    uint64_t passes() const { return passes_; }
    uint64_t failures() const { return failures_; }
    uint64_t repairsHeld() const { return held_; }
    bool contested() const;
    std::string lastError() const;
    std::chrono::milliseconds nextRetryDelay() const { return retry_.nextDelay(); }

    // "reconcile": {passes, failures, lastError, contested, repairsHeld} under out[section].
    void status(nlohmann::json& section) const;
    // kovs_reconcile_{passes,failures,repairs_held}_total and kovs_reconcile_contested, labelled job=...
    void metrics(MetricsText& out) const;

private:
    void schedule(std::chrono::milliseconds delay);
    void runPass();
    void finish(uint64_t id, Result result);
    void armResync();

    EventLoop& loop_;
    ReconcileOptions opts_;
    Pass pass_;
    RetryTimer retry_;
    RepairThrottle throttle_;

    bool started_ = false;
    bool inFlight_ = false;
    bool again_ = false;      // triggered while a pass was in flight
    bool wantFull_ = false;   // the next pass reads everything back
    bool admitted_ = false;   // a held-back repair's wait is over
    uint64_t passId_ = 0;
    unsigned streak_ = 0;     // failed passes in a row
    std::optional<EventLoop::TimerId> pending_;
    EventLoop::Clock::time_point pendingAt_{};
    std::optional<EventLoop::TimerId> resync_;
    std::optional<EventLoop::TimerId> heldTimer_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

    std::atomic<uint64_t> passes_{0}, failures_{0}, held_{0};
    mutable std::mutex errorMutex_;
    std::string error_;
};

}  // namespace kovs
