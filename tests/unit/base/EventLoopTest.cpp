// The event loop's stop: a SIGTERM the agent sees while a start-up step waits
// on the loop (runUntil) must end that wait and every later run() (issue 15,
// item 3: the stop used to be forgotten, so termination waited for SIGKILL).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/EventLoop.hpp"

using namespace kovs;
using namespace std::chrono_literals;

// A stop that arrives during a start-up wait ends the wait there, not at its
// deadline: a timer due a second later never runs.
TEST(EventLoop, AStopEndsAWaitInProgress) {
    EventLoop loop;
    bool later = false;
    loop.after(10ms, [&] { loop.stop(); });
    loop.after(1s, [&] { later = true; });
    EXPECT_FALSE(loop.runUntil([] { return false; }, 3s));
    EXPECT_FALSE(later) << "the wait went on after the stop";
    EXPECT_TRUE(loop.stopped());
}

// The stop seen during start-up is not forgotten when the agent then enters
// its main loop: run() returns without running anything more.
TEST(EventLoop, AStopSeenDuringAWaitEndsTheNextRun) {
    EventLoop loop;
    loop.after(10ms, [&] { loop.stop(); });
    loop.runUntil([] { return false; }, 3s);
    bool ranAfterStop = false;
    loop.after(0ms, [&] { ranAfterStop = true; });
    // Without the fix run() never returns: this timer ends the test instead.
    loop.after(2s, [&] { loop.stop(); });
    loop.run();
    EXPECT_FALSE(ranAfterStop) << "run() went on after a stop seen during start-up";
}

// A wait that begins after the stop does not wait at all.
TEST(EventLoop, AWaitAfterAStopReturnsAtOnce) {
    EventLoop loop;
    loop.stop();
    int polls = 0;
    EXPECT_FALSE(loop.runUntil([&] { return ++polls > 1000; }, 3s));
    EXPECT_LE(polls, 1) << "the stopped loop kept polling";
    // An answer already there still counts.
    EXPECT_TRUE(loop.runUntil([] { return true; }, 3s));
}

// stop() is thread-safe: the health server's thread or a test may call it.
TEST(EventLoop, AStopFromAnotherThreadEndsRun) {
    EventLoop loop;
    std::atomic<bool> running{false};
    loop.post([&] { running = true; });
    std::thread stopper([&] {
        while (!running) std::this_thread::sleep_for(1ms);
        loop.stop();
    });
    bool later = false;
    loop.after(30s, [&] { later = true; });
    loop.run();
    stopper.join();
    EXPECT_FALSE(later);
}
