#include "base/ReconcileEngine.hpp"

#include <spdlog/spdlog.h>

namespace kovs {

ReconcileEngine::ReconcileEngine(EventLoop& loop, ReconcileOptions opts, Pass pass)
    : loop_(loop),
      opts_(std::move(opts)),
      pass_(std::move(pass)),
      retry_(loop_, opts_.retryMin, opts_.retryMax, [this] { requestFull(); }),
      throttle_(opts_.repairBurst, opts_.repairWindow, opts_.repairFirst, opts_.repairMax) {}

ReconcileEngine::~ReconcileEngine() {
    *alive_ = false;
    stop();
}

void ReconcileEngine::start() {
    if (started_) return;
    started_ = true;
    armResync();
    runNow(true);
}

void ReconcileEngine::stop() {
    started_ = false;
    retry_.cancel();
    for (auto* t : {&pending_, &resync_, &heldTimer_}) {
        if (*t) loop_.cancel(**t);
        t->reset();
    }
}

void ReconcileEngine::armResync() {
    if (opts_.resync.count() <= 0) return;
    // Re-armed before the pass it asks for: nothing a pass does ends the resync.
    resync_ = loop_.after(opts_.resync, [this] {
        resync_.reset();
        armResync();
        requestFull();
    });
}

void ReconcileEngine::trigger(std::optional<std::chrono::milliseconds> delay) {
    if (!started_) return;
    schedule(delay.value_or(opts_.coalesce));
}

void ReconcileEngine::requestFull(std::chrono::milliseconds delay) {
    if (!started_) return;
    wantFull_ = true;
    schedule(delay);
}

void ReconcileEngine::schedule(std::chrono::milliseconds delay) {
    if (inFlight_) {
        again_ = true;
        return;
    }
    auto at = EventLoop::Clock::now() + delay;
    if (pending_) {
        if (at >= pendingAt_) return;  // coalesced into the pending one
        loop_.cancel(*pending_);
    }
    pendingAt_ = at;
    pending_ = loop_.after(delay, [this] {
        pending_.reset();
        runPass();
    });
}

void ReconcileEngine::runNow(bool full) {
    if (!started_) return;
    wantFull_ = wantFull_ || full;
    if (inFlight_) {
        again_ = true;
        return;
    }
    if (pending_) loop_.cancel(*pending_);
    pending_.reset();
    runPass();
}

void ReconcileEngine::runPass() {
    if (!started_) return;
    bool full = wantFull_;
    wantFull_ = again_ = false;
    inFlight_ = true;
    uint64_t id = ++passId_;
    auto token = alive_;
    Done done = [this, token, id](Result r) {
        if (*token) finish(id, std::move(r));
    };
    try {
        pass_(full, done);
    } catch (const std::exception& e) {
        finish(id, Result::failed(e.what()));
    }
}

void ReconcileEngine::finish(uint64_t id, Result r) {
    if (id != passId_ || !inFlight_) return;  // this pass already ended
    inFlight_ = false;
    admitted_ = false;
    ++passes_;
    if (!r.error.empty()) {
        ++failures_;
        ++streak_;
        bool news;
        {
            std::lock_guard lock(errorMutex_);
            news = r.error != error_;
            error_ = r.error;
        }
        bool log = streak_ >= opts_.quietFailures && (news || streak_ == opts_.quietFailures || streak_ % 100 == 0);
        if (log) {
            spdlog::warn("{}: {} (failed {} time{} in a row; retrying in {} ms)", opts_.job, r.error, streak_,
                         streak_ == 1 ? "" : "s", retry_.nextDelay().count());
        } else {
            spdlog::debug("{}: {}; retrying", opts_.job, r.error);
        }
    } else {
        bool cleared;
        {
            std::lock_guard lock(errorMutex_);
            cleared = !error_.empty();
            error_.clear();
        }
        if (cleared && streak_ >= opts_.quietFailures) spdlog::info("{}: recovered", opts_.job);
        streak_ = 0;
    }
    if (!started_) return;
    if (r.error.empty() && !r.incomplete) {
        retry_.succeeded();
    } else {
        retry_.schedule();
    }
    if (again_) schedule(std::chrono::milliseconds(0));
}

bool ReconcileEngine::admitRepair(const std::string& what) {
    if (admitted_) {
        admitted_ = false;
        return true;
    }
    if (heldTimer_) {  // already held back: the pass at its end repairs
        ++held_;
        return false;
    }
    auto wait = throttle_.admit();
    if (wait.count() == 0) return true;
    ++held_;
    spdlog::warn("{}: {} changed under the agent {} times in {} s; repairing in {} ms", opts_.job, what,
                 throttle_.inWindow(), throttle_.window().count() / 1000, wait.count());
    if (!heldTimer_) {
        heldTimer_ = loop_.after(wait, [this] {
            heldTimer_.reset();
            admitted_ = true;
            runNow(true);
        });
    }
    return false;
}

bool ReconcileEngine::contested() const { return throttle_.contested(); }

std::string ReconcileEngine::lastError() const {
    std::lock_guard lock(errorMutex_);
    return error_;
}

void ReconcileEngine::status(nlohmann::json& section) const {
    section["reconcile"] = {{"passes", passes_.load()},
                            {"failures", failures_.load()},
                            {"lastError", lastError()},
                            {"contested", contested()},
                            {"repairsHeld", held_.load()}};
}

void ReconcileEngine::metrics(MetricsText& out) const {
    MetricLabels job{{"job", opts_.job}};
    out.counter("kovs_reconcile_passes_total", "Reconcile passes a job ran, by job.", static_cast<double>(passes_), job);
    out.counter("kovs_reconcile_failures_total", "Reconcile passes that failed (retried with backoff), by job.",
                static_cast<double>(failures_), job);
    out.counter("kovs_reconcile_repairs_held_total",
                "Repairs a job held back because the same thing kept being changed under it, by job.",
                static_cast<double>(held_), job);
    out.gauge("kovs_reconcile_contested", "1 while something keeps undoing a job's repairs (they are backed off), by job.",
              contested() ? 1 : 0, job);
}

}  // namespace kovs
