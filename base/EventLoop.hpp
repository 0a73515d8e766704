#pragma once
// Single-threaded epoll loop: fd readiness callbacks, one-shot timers and a
// thread-safe post() queue. Every reconciler of the agent runs on one loop.
// A callback, timer or posted task that throws is logged and counted
// (callbackErrors()) and the loop goes on: one job's failure never ends the
// others. Jobs still catch what they can handle and report it themselves;
// this is the backstop for what they did not foresee.
#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/UniqueFd.hpp"

namespace kovs {

class EventLoop {
public:
    using Clock = std::chrono::steady_clock;
    using FdCallback = std::function<void(uint32_t events)>;
    using Task = std::function<void()>;
    using TimerId = uint64_t;

    EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // Watches fd for `events` (EPOLLIN, EPOLLOUT...). The fd stays owned by the caller.
    void watch(int fd, uint32_t events, FdCallback cb);
    void modify(int fd, uint32_t events);
    void unwatch(int fd);

    TimerId after(Clock::duration delay, Task task);
    void cancel(TimerId id);

    // Thread-safe: runs `task` on the loop thread.
    void post(Task task);

    // Runs until stop(); returns after the iteration in which stop() was called.
    void run();
    // Runs until `done()` is true or the deadline passes; returns done().
    // A stopped loop runs nothing more: the wait gives up at once (false
    // unless done() already holds), so a SIGTERM during a start-up step
    // that waits here ends that step instead of its timeout.
    bool runUntil(const std::function<bool()>& done, Clock::duration timeout);
    // Thread-safe and final: a loop once stopped stays stopped, so a stop
    // seen inside a start-up wait is not forgotten by the run() after it.
    void stop();
    bool stopped() const { return stopped_; }
    // Callbacks that threw since the loop began (each also logged once).
    uint64_t callbackErrors() const { return callbackErrors_; }

private:
    void runOnce(int timeoutMs);
    int msUntilNextTimer() const;
    void fireTimers();
    void drainPosted();
    template <typename F>
    void guarded(const char* what, F&& f);

    UniqueFd epoll_;
    UniqueFd wake_;
    std::unordered_map<int, FdCallback> fds_;
    std::multimap<Clock::time_point, std::pair<TimerId, Task>> timers_;
    TimerId nextTimer_ = 1;
    std::mutex postedMutex_;
    std::vector<Task> posted_;
    std::atomic<bool> stopped_{false};
    uint64_t callbackErrors_ = 0;
};

}  // namespace kovs
