// The offload job's plan: what it repairs, what it reports as unreadable, and
// how it says so. The observations are made by hand here; reading real
// devices is the integration test's (tests/integration/offload).
#include "offload/OffloadPlan.hpp"

#include <gtest/gtest.h>

#include "tests/integration/support/Emulator.hpp"

using namespace kovs::offload;
using Aspect = OffloadObservation::Aspect;

namespace {

OffloadObservation seen(Aspect aspect, std::string where, std::string netns, std::optional<bool> needsRepair,
                        std::string error = "") {
    return {aspect, where, std::move(netns), where, needsRepair, std::move(error)};
}

}  // namespace

TEST(OffloadPlan, RepairsOnlyWhatNeedsItAndCountsWhatWasRead) {
    auto plan = planOffload({seen(Aspect::TxChecksum, "gw0", "", true), seen(Aspect::TxChecksum, "br-phy", "", false),
                             seen(Aspect::TxChecksum, "pod a/b (/run/netns/x:eth0)", "/run/netns/x", true),
                             seen(Aspect::HostVeth, "veth1234", "", false)});
    ASSERT_EQ(plan.repairs.size(), 2u);
    EXPECT_EQ(plan.repairs[0].where, "gw0");
    EXPECT_EQ(plan.repairs[1].netns, "/run/netns/x") << "a pod's repair is made inside its netns";
    EXPECT_TRUE(plan.unreadable.empty());
    EXPECT_EQ(plan.checked, 4u);
    EXPECT_FALSE(plan.empty());
}

TEST(OffloadPlan, AnUnreadableDeviceIsReportedNeverRepaired) {
    auto plan = planOffload({seen(Aspect::TxChecksum, "gw0", "", std::nullopt, "gw0: No such device"),
                             seen(Aspect::HostVeth, "veth9", "", true)});
    ASSERT_EQ(plan.unreadable.size(), 1u);
    EXPECT_EQ(plan.unreadable[0].error, "gw0: No such device");
    ASSERT_EQ(plan.repairs.size(), 1u) << "one broken device does not stop the others";
    EXPECT_EQ(plan.repairs[0].aspect, Aspect::HostVeth);
    EXPECT_EQ(plan.checked, 1u);
}

TEST(OffloadPlan, NothingDriftedIsAnEmptyPlan) {
    auto plan = planOffload({seen(Aspect::TxChecksum, "gw0", "", false), seen(Aspect::HostVeth, "veth1", "", false)});
    EXPECT_TRUE(plan.empty());
    EXPECT_EQ(plan.checked, 2u);
    EXPECT_TRUE(planOffload({}).empty());
}

TEST(OffloadPlan, RepairsAreDescribedAsDoneOrAsADryRun) {
    auto tx = seen(Aspect::TxChecksum, "gw0", "", true);
    EXPECT_EQ(describe(tx, true), "would turn TX checksum off on gw0");
    EXPECT_EQ(describe(tx, false), "turned TX checksum off on gw0");
    auto veth = seen(Aspect::HostVeth, "veth1", "", true);
    EXPECT_EQ(describe(veth, true), "would take veth1 (a pod veth's host end) off the node's IP stack");
}

TEST(OffloadPlan, AMissingNetnsIsObservedAsUnreadableNotThrown) {
    if (kovs::test::underEmulator()) GTEST_SKIP() << kovs::test::kQemuNoNsIoctl;
    // Reading needs no privilege when the netns cannot even be opened.
    auto observed = observePod({"/nonexistent/netns/kovs-test", "eth0", "", "default/gone", false});
    ASSERT_EQ(observed.size(), 1u) << "a pod without a host end to look after is observed in its netns only";
    EXPECT_FALSE(observed[0].needsRepair.has_value());
    EXPECT_NE(observed[0].error.find("/nonexistent/netns/kovs-test"), std::string::npos) << observed[0].error;
    EXPECT_EQ(observed[0].where, "pod default/gone (/nonexistent/netns/kovs-test:eth0)");
    auto plan = planOffload(observed);
    EXPECT_EQ(plan.unreadable.size(), 1u);
    EXPECT_TRUE(plan.repairs.empty());
}
