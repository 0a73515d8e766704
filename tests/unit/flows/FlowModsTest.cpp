// flowModsBetween: a changed table as the flow mods that make it, or the
// whole table where nothing is installed.
#include <gtest/gtest.h>

#include <algorithm>

#include "flows/OpenFlowBridge.hpp"

using kovs::flows::flowModsBetween;

namespace {
const std::string kTable =
    "table=0,priority=0,actions=drop\n"
    "table=0,priority=200,in_port=1 actions=goto_table:10\n"
    "table=24,priority=100,cookie=0x6b05,ip,nw_dst=10.244.1.5 actions=drop\n"
    "table=24,priority=200,ip,nw_dst=10.244.1.5 actions=conjunction(1,1/2)\n"
    "table=30,priority=100,ip,nw_dst=10.244.1.5 actions=output:7\n"
    "table=30,priority=100,ip,nw_dst=10.244.1.6 actions=output:8\n"
    "table=30,priority=100,ip,nw_dst=10.244.1.7 actions=output:9\n"
    "table=30,priority=50,ip actions=output:1\n";
}  // namespace

TEST(FlowMods, OnlyWhatChangedAsDeletesAndAdds) {
    auto desired = kTable;
    desired.replace(desired.find("conjunction(1,1/2)"), 18, "conjunction(1,1/2),conjunction(2,1/2)");  // changed actions
    desired.erase(desired.find("table=24,priority=100"), std::string("table=24,priority=100,cookie=0x6b05,ip,nw_dst=10.244.1.5 actions=drop\n").size());
    desired += "table=24,priority=0,actions=goto_table:28\n";
    auto mods = flowModsBetween(kTable, desired);
    ASSERT_TRUE(mods);
    EXPECT_EQ(*mods,
              "flow delete_strict table=24,priority=100,ip,nw_dst=10.244.1.5\n"
              "flow add table=24,priority=200,ip,nw_dst=10.244.1.5 actions=conjunction(1,1/2),conjunction(2,1/2)\n"
              "flow add table=24,priority=0,actions=goto_table:28\n");
}

TEST(FlowMods, TheWholeTableOnlyWhereNothingIsInstalled) {
    EXPECT_FALSE(flowModsBetween("", kTable)) << "nothing installed";
    // A table mostly new is still its difference: every old flow but one
    // deleted, the new one added, the unchanged one left alone.
    auto mostlyNew = flowModsBetween(kTable, "table=0,priority=0,actions=drop\ntable=5,priority=1,actions=drop\n");
    ASSERT_TRUE(mostlyNew);
    EXPECT_EQ(std::count(mostlyNew->begin(), mostlyNew->end(), '\n'), 8) << *mostlyNew;
    EXPECT_EQ(mostlyNew->find("flow add table=0,priority=0,"), std::string::npos) << *mostlyNew;
    EXPECT_NE(mostlyNew->find("flow add table=5,priority=1,actions=drop\n"), std::string::npos) << *mostlyNew;
    auto same = flowModsBetween(kTable, kTable);
    ASSERT_TRUE(same);
    EXPECT_EQ(*same, "");
}
