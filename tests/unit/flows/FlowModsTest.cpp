// flowModsBetween: a changed table as the few flow mods that make it, or the
// whole table where that is no cheaper.
#include <gtest/gtest.h>

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

TEST(FlowMods, TheWholeTableWhereThatIsNoDearer) {
    EXPECT_FALSE(flowModsBetween("", kTable)) << "nothing installed";
    EXPECT_FALSE(flowModsBetween(kTable, "table=0,priority=0,actions=drop\ntable=5,priority=1,actions=drop\n")) << "mostly new";
    auto same = flowModsBetween(kTable, kTable);
    ASSERT_TRUE(same);
    EXPECT_EQ(*same, "");
}
