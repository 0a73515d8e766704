#pragma once
// One pending retry at a time, with a delay that doubles up to a cap while
// the work keeps failing. schedule() while a retry is pending does nothing,
// so a failure reported from several places (monitor updates, resyncs,
// vswitchd restarts) never stacks up timers; succeeded() cancels a pending
// retry and starts the next failure at the minimum delay again.
#include <algorithm>
#include <chrono>
#include <functional>

#include "base/EventLoop.hpp"

namespace kovs {

class RetryTimer {
public:
    RetryTimer(EventLoop& loop, std::chrono::milliseconds min, std::chrono::milliseconds max, EventLoop::Task retry)
        : loop_(loop), min_(min), max_(max), delay_(min), retry_(std::move(retry)) {}
    ~RetryTimer() { cancel(); }
    RetryTimer(const RetryTimer&) = delete;
    RetryTimer& operator=(const RetryTimer&) = delete;

    void schedule() {
        if (pending_) return;
        pending_ = loop_.after(delay_, [this] {
            pending_ = 0;
            retry_();
        });
        delay_ = std::min(delay_ * 2, max_);
    }
    void succeeded() {
        cancel();
        delay_ = min_;
    }
    // Drops a pending retry; the next failure keeps the current delay.
    void cancel() {
        if (pending_) loop_.cancel(pending_);
        pending_ = 0;
    }
    bool pending() const { return pending_ != 0; }
    std::chrono::milliseconds nextDelay() const { return delay_; }

private:

    EventLoop& loop_;
    std::chrono::milliseconds min_, max_, delay_;
    EventLoop::Task retry_;
    EventLoop::TimerId pending_ = 0;
};

}  // namespace kovs
