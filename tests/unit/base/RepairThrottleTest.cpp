#include <gtest/gtest.h>

#include "base/RepairThrottle.hpp"

using namespace kovs;
using namespace std::chrono_literals;

TEST(RepairThrottle, ABurstGoesAtOnceThenEachRepairWaitsTwiceAsLong) {
    RepairThrottle t(3, 60s, 1s, 8s);
    auto now = RepairThrottle::Clock::now();
    EXPECT_EQ(t.admit(now), 0ms);
    EXPECT_EQ(t.admit(now), 0ms);
    EXPECT_EQ(t.admit(now), 0ms);
    EXPECT_FALSE(t.contested(now));
    EXPECT_EQ(t.admit(now), 1000ms);
    EXPECT_TRUE(t.contested(now));
    EXPECT_EQ(t.admit(now), 2000ms);
    EXPECT_EQ(t.admit(now), 4000ms);
    EXPECT_EQ(t.admit(now), 8000ms);
    EXPECT_EQ(t.admit(now), 8000ms) << "capped";
    EXPECT_EQ(t.total(), 8u);
}

TEST(RepairThrottle, QuietForAWindowIsForgiven) {
    RepairThrottle t(2, 10s, 1s, 8s);
    auto now = RepairThrottle::Clock::now();
    t.admit(now);
    t.admit(now);
    EXPECT_EQ(t.admit(now), 1000ms);
    auto later = now + 11s;
    EXPECT_FALSE(t.contested(later));
    EXPECT_EQ(t.admit(later), 0ms);
}
