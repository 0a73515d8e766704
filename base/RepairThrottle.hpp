#pragma once
// A guard that keeps repairing the same thing is fighting another writer (a
// second agent, an operator's script, another CNI): it must back off and say
// so, never spin. Every repair is admitted through this: the first `burst`
// within `window` go at once; each one after that waits twice as long as the
// one before, up to `max`, until the window holds fewer than `burst` again.
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

namespace kovs {

class RepairThrottle {
public:
    using Clock = std::chrono::steady_clock;

    RepairThrottle(unsigned burst = 5, std::chrono::milliseconds window = std::chrono::seconds(60),
                   std::chrono::milliseconds first = std::chrono::seconds(1),
                   std::chrono::milliseconds max = std::chrono::minutes(5))
        : burst_(burst), window_(window), first_(first), max_(max) {}

    // Records a repair about to be made at `now`; returns how long to wait first.
    std::chrono::milliseconds admit(Clock::time_point now = Clock::now()) {
        while (!recent_.empty() && now - recent_.front() > window_) recent_.pop_front();
        recent_.push_back(now);
        ++total_;
        if (recent_.size() <= burst_) return std::chrono::milliseconds(0);
        auto over = recent_.size() - burst_;
        auto delay = first_;
        for (size_t i = 1; i < over && delay < max_; ++i) delay *= 2;
        return std::min(delay, max_);
    }
    // More repairs within the window than the burst: someone keeps undoing
    // them, and they are being held back.
    bool contested(Clock::time_point now = Clock::now()) const {
        size_t n = 0;
        for (auto t : recent_) n += now - t <= window_ ? 1 : 0;
        return n > burst_;
    }
    uint64_t total() const { return total_; }
    size_t inWindow() const { return recent_.size(); }
    std::chrono::milliseconds window() const { return window_; }

private:
    unsigned burst_;
    std::chrono::milliseconds window_, first_, max_;
    std::deque<Clock::time_point> recent_;
    uint64_t total_ = 0;
};

}  // namespace kovs
