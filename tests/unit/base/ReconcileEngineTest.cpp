// ReconcileEngine: the one loop every job runs on. Each test drives a real
// EventLoop with a pass that records what it was asked and answers as told.
#include "base/ReconcileEngine.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

using namespace std::chrono_literals;
using kovs::EventLoop;
using kovs::ReconcileEngine;
using kovs::ReconcileOptions;

namespace {

struct Recorder {
    std::vector<bool> full;  // one entry a pass: was it full?
    ReconcileEngine::Done held;  // an async pass left open
    bool async = false;
    int throwsLeft = 0;
    int failuresLeft = 0;
    int incompleteLeft = 0;

    ReconcileEngine::Pass pass() {
        return [this](bool f, ReconcileEngine::Done done) {
            full.push_back(f);
            if (throwsLeft > 0) {
                --throwsLeft;
                throw std::runtime_error("ovs-ofctl: cannot start: Too many open files");
            }
            if (async) {
                held = std::move(done);
                return;
            }
            if (failuresLeft > 0) {
                --failuresLeft;
                return done(ReconcileEngine::Result::failed("br-int: connection refused"));
            }
            if (incompleteLeft > 0) {
                --incompleteLeft;
                return done(ReconcileEngine::Result::notYet());
            }
            done(ReconcileEngine::Result::ok());
        };
    }
};

ReconcileOptions options() {
    ReconcileOptions o;
    o.job = "test";
    o.resync = 0ms;
    o.coalesce = 5ms;
    o.retryMin = 1ms;
    o.retryMax = 4ms;
    return o;
}

void spin(EventLoop& loop, std::chrono::milliseconds d) { loop.runUntil([] { return false; }, d); }

}  // namespace

TEST(ReconcileEngine, StartRunsOneFullPassAndTriggersBeforeItAreIgnored) {
    EventLoop loop;
    Recorder r;
    ReconcileEngine engine(loop, options(), r.pass());
    engine.trigger();
    engine.requestFull();
    spin(loop, 20ms);
    EXPECT_TRUE(r.full.empty()) << "a pass ran before start()";
    engine.start();
    ASSERT_EQ(r.full, std::vector<bool>{true});
    spin(loop, 20ms);
    EXPECT_EQ(r.full.size(), 1u);
}

TEST(ReconcileEngine, TriggersWithinTheCoalesceDelayShareOnePass) {
    EventLoop loop;
    Recorder r;
    ReconcileEngine engine(loop, options(), r.pass());
    engine.start();
    for (int i = 0; i < 50; ++i) engine.trigger();
    spin(loop, 30ms);
    EXPECT_EQ(r.full, (std::vector<bool>{true, false})) << "50 triggers, one quick pass after the first";
}

TEST(ReconcileEngine, ASoonerTriggerMovesThePendingPassUp) {
    EventLoop loop;
    Recorder r;
    ReconcileEngine engine(loop, options(), r.pass());
    engine.start();
    engine.trigger(10s);
    engine.trigger(0ms);
    ASSERT_TRUE(loop.runUntil([&] { return r.full.size() == 2; }, 1s)) << "the 0 ms trigger waited for the 10 s one";
    spin(loop, 20ms);
    EXPECT_EQ(r.full.size(), 2u) << "the 10 s trigger ran as well";
}

TEST(ReconcileEngine, OnePassInFlightAndOneMoreForEverythingAskedMeanwhile) {
    EventLoop loop;
    Recorder r;
    r.async = true;
    ReconcileEngine engine(loop, options(), r.pass());
    engine.start();
    ASSERT_TRUE(engine.passInFlight());
    for (int i = 0; i < 10; ++i) engine.trigger(0ms);
    engine.requestFull();
    engine.runNow(false);
    spin(loop, 20ms);
    EXPECT_EQ(r.full.size(), 1u) << "a second pass started while the first was in flight";
    auto done = std::move(r.held);
    done(ReconcileEngine::Result::ok());
    done(ReconcileEngine::Result::failed("late second answer"));  // ignored
    ASSERT_TRUE(loop.runUntil([&] { return r.full.size() == 2; }, 1s));
    EXPECT_TRUE(r.full[1]) << "the full pass asked for meanwhile was not lost";
    r.async = false;
    r.held(ReconcileEngine::Result::ok());
    spin(loop, 20ms);
    EXPECT_EQ(r.full.size(), 2u);
    EXPECT_EQ(engine.failures(), 0u) << "a second Done of one pass counted";
    EXPECT_EQ(engine.passes(), 2u);
}

TEST(ReconcileEngine, AThrowIsAFailedPassRetriedWithBackoffNeverTheEndOfRepairs) {
    EventLoop loop;
    Recorder r;
    r.throwsLeft = 4;
    ReconcileEngine engine(loop, options(), r.pass());
    engine.start();
    EXPECT_EQ(engine.lastError(), "ovs-ofctl: cannot start: Too many open files");
    ASSERT_TRUE(loop.runUntil([&] { return r.full.size() == 5; }, 1s)) << "retries stopped after " << r.full.size();
    EXPECT_EQ(engine.failures(), 4u);
    EXPECT_EQ(engine.lastError(), "") << "a clean pass did not clear the error";
    for (bool f : r.full) EXPECT_TRUE(f) << "a retry must read everything back";
    spin(loop, 20ms);
    EXPECT_EQ(r.full.size(), 5u) << "retries went on after a clean pass";
    EXPECT_EQ(engine.nextRetryDelay(), 1ms) << "backoff not reset by the clean pass";
}

TEST(ReconcileEngine, BackoffDoublesToItsCapWhileThePassKeepsFailing) {
    EventLoop loop;
    Recorder r;
    r.failuresLeft = 1000;
    auto o = options();
    o.retryMin = 2ms;
    o.retryMax = 16ms;
    ReconcileEngine engine(loop, o, r.pass());
    engine.start();
    spin(loop, 200ms);
    // 2 + 4 + 8 + 16 + 16 ... ms: about 14 passes in 200 ms, never one per millisecond.
    EXPECT_GE(r.full.size(), 6u);
    EXPECT_LE(r.full.size(), 20u) << "the failing pass was not backed off";
    EXPECT_EQ(engine.nextRetryDelay(), 16ms);
    EXPECT_EQ(engine.failures(), r.full.size());
}

TEST(ReconcileEngine, IncompleteIsRetriedButNotAFailure) {
    EventLoop loop;
    Recorder r;
    r.incompleteLeft = 3;
    ReconcileEngine engine(loop, options(), r.pass());
    engine.start();
    ASSERT_TRUE(loop.runUntil([&] { return r.full.size() == 4; }, 1s));
    EXPECT_EQ(engine.failures(), 0u);
    EXPECT_EQ(engine.lastError(), "");
}

TEST(ReconcileEngine, ResyncRunsFullPassesEvenWhenPassesThrow) {
    EventLoop loop;
    Recorder r;
    r.throwsLeft = 1000;
    auto o = options();
    o.resync = 10ms;
    o.retryMin = o.retryMax = 10s;  // only the resync can run the passes
    ReconcileEngine engine(loop, o, r.pass());
    engine.start();
    spin(loop, 65ms);
    EXPECT_GE(r.full.size(), 4u) << "the periodic resync ended";
    EXPECT_LE(r.full.size(), 8u);
}

TEST(ReconcileEngine, RepairsBeyondTheBurstAreHeldBackAndReportedContested) {
    EventLoop loop;
    int repairs = 0, held = 0;
    auto o = options();
    o.repairBurst = 3;
    o.repairFirst = 20ms;
    o.repairMax = 20ms;
    ReconcileEngine* self = nullptr;
    ReconcileEngine engine(loop, o, [&](bool, ReconcileEngine::Done done) {
        if (self->admitRepair("the table")) ++repairs;
        else ++held;
        done(ReconcileEngine::Result::ok());
    });
    self = &engine;
    engine.start();
    for (int i = 0; i < 5; ++i) engine.runNow();
    EXPECT_EQ(repairs, 3);
    EXPECT_EQ(held, 3);
    EXPECT_TRUE(engine.contested());
    EXPECT_EQ(engine.repairsHeld(), 3u);
    // One pass is run when the wait is over, and its repair goes through.
    ASSERT_TRUE(loop.runUntil([&] { return repairs == 4; }, 1s));
    spin(loop, 60ms);
    EXPECT_EQ(repairs, 4) << "held repairs stacked up timers";
    nlohmann::json status;
    engine.status(status);
    EXPECT_EQ(status["reconcile"]["repairsHeld"], 3);
    EXPECT_EQ(status["reconcile"]["contested"], true);
}

TEST(ReconcileEngine, StopEndsPassesAndALateDoneIsHarmless) {
    EventLoop loop;
    Recorder r;
    r.async = true;
    ReconcileEngine::Done late;
    {
        auto o = options();
        o.resync = 5ms;
        ReconcileEngine engine(loop, o, r.pass());
        engine.start();
        late = r.held;
        engine.stop();
        engine.trigger(0ms);
        spin(loop, 30ms);
        EXPECT_EQ(r.full.size(), 1u) << "a pass ran after stop()";
    }
    // Must not touch the engine (under ASan, a use after free fails the test).
    late(ReconcileEngine::Result::failed("vswitchd answered after the job was gone"));
}

TEST(ReconcileEngine, MetricsCarryTheJobLabel) {
    EventLoop loop;
    Recorder r;
    r.failuresLeft = 1;
    ReconcileEngine engine(loop, options(), r.pass());
    engine.start();
    kovs::MetricsText m;
    engine.metrics(m);
    auto text = m.str();
    EXPECT_NE(text.find("kovs_reconcile_failures_total{job=\"test\"} 1"), std::string::npos) << text;
    EXPECT_NE(text.find("kovs_reconcile_passes_total{job=\"test\"} 1"), std::string::npos) << text;
}
