// RetryTimer: failures reported many times keep one retry pending; the delay
// doubles to its cap and starts over after a success.
#include "base/RetryTimer.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using kovs::EventLoop;
using kovs::RetryTimer;

TEST(RetryTimer, ManyFailuresKeepOneRetryPending) {
    EventLoop loop;
    int runs = 0;
    RetryTimer retry(loop, 1ms, 8ms, [&] { ++runs; });
    for (int i = 0; i < 100; ++i) retry.schedule();
    EXPECT_TRUE(retry.pending());
    EXPECT_EQ(retry.nextDelay(), 2ms);
    loop.runUntil([] { return false; }, 50ms);
    EXPECT_EQ(runs, 1) << "100 failures reported while one retry was pending";
    EXPECT_FALSE(retry.pending());
}

TEST(RetryTimer, DelayDoublesToItsCapAndResetsOnSuccess) {
    EventLoop loop;
    int runs = 0;
    RetryTimer retry(loop, 1ms, 8ms, [&] { ++runs; });
    std::vector<std::chrono::milliseconds> delays;
    for (int i = 0; i < 5; ++i) {
        delays.push_back(retry.nextDelay());
        retry.schedule();
        ASSERT_TRUE(loop.runUntil([&] { return runs == i + 1; }, 1s));
    }
    EXPECT_EQ(delays, (std::vector<std::chrono::milliseconds>{1ms, 2ms, 4ms, 8ms, 8ms}));
    retry.schedule();
    retry.succeeded();
    EXPECT_FALSE(retry.pending());
    EXPECT_EQ(retry.nextDelay(), 1ms);
    loop.runUntil([] { return false; }, 30ms);
    EXPECT_EQ(runs, 5) << "a retry cancelled by success still ran";
}
