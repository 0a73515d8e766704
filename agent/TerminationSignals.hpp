#pragma once
// SIGTERM and SIGINT for kovs-agent: they stop the event loop, wherever the
// agent is. kubelet sends SIGTERM and waits terminationGracePeriodSeconds
// (30 s) before SIGKILL, and a DaemonSet rollout waits for every pod to end,
// so the agent must end promptly also in the middle of its start-up.
//
// A thread of its own waits for the signals (sigwaitinfo), so they are seen
// even while the main thread is inside a start-up step that does not run the
// loop (a subprocess, a helper with a private loop). It stops the loop, which
// ends every wait that runs on it (EventLoop::runUntil) and the main loop.
// If the main thread has still not come back `cutShortAfter` later, the
// process exits at once (_exit): exactly what the SIGKILL at the end of the
// grace period would do, only sooner; every job is idempotent across an
// agent killed at any point (the uplink writes its record before it changes
// anything), so nothing is lost that a kill -9 would keep.
//
// Construct it before any other thread exists: the signals are blocked here
// for this thread and every thread and child created after (children get
// them back, base/Process initSpawnAttrs).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/EventLoop.hpp"

namespace kovs::agent {

class TerminationSignals {
public:
    TerminationSignals(EventLoop& loop, std::chrono::milliseconds cutShortAfter);
    // The normal way out (the loop returned): ends the thread, no _exit.
    ~TerminationSignals();
    TerminationSignals(const TerminationSignals&) = delete;
    TerminationSignals& operator=(const TerminationSignals&) = delete;

    // The signal that stopped the loop, 0 if none came.
    int received() const { return received_; }

private:
    void wait();

    EventLoop& loop_;
    std::chrono::milliseconds cutShortAfter_;
    std::mutex mutex_;
    std::condition_variable done_;
    bool finished_ = false;
    std::atomic<int> received_{0};
    std::thread thread_;
};

}  // namespace kovs::agent
