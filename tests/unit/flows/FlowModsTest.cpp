// flowModsBetween: a changed table as the flow mods that make it, or the
// whole table where nothing is installed.
#include <gtest/gtest.h>

#include <algorithm>

#include "flows/OpenFlowBridge.hpp"

using kovs::flows::Flow;
using kovs::flows::flowModsBetween;
using kovs::flows::Table;

namespace {
const std::vector<Flow> kTable{
    {Table::Ingress, 0, 0, "", "drop"},
    {Table::Ingress, 200, 0, "in_port=1", "goto_table:10"},
    {Table::IngressPolicy, 100, 0x6b05, "ip,nw_dst=10.244.1.5", "drop"},
    {Table::IngressPolicy, 200, 0, "ip,nw_dst=10.244.1.5", "conjunction(1,1/2)"},
    {Table::Forward, 100, 0, "ip,nw_dst=10.244.1.5", "output:7"},
    {Table::Forward, 100, 0, "ip,nw_dst=10.244.1.6", "output:8"},
    {Table::Forward, 100, 0, "ip,nw_dst=10.244.1.7", "output:9"},
    {Table::Forward, 50, 0, "ip", "output:1"},
};
}  // namespace

TEST(FlowMods, OnlyWhatChangedAsDeletesAndAdds) {
    auto desired = kTable;
    desired[3].actions = "conjunction(1,1/2),conjunction(2,1/2)";  // changed actions
    desired.erase(desired.begin() + 2);
    desired.push_back({Table::IngressPolicy, 0, 0, "", "goto_table:29"});
    auto mods = flowModsBetween(kTable, desired);
    ASSERT_TRUE(mods);
    EXPECT_EQ(*mods,
              "flow delete_strict table=27,priority=100,ip,nw_dst=10.244.1.5\n"
              "flow add table=27,priority=200,ip,nw_dst=10.244.1.5 actions=conjunction(1,1/2),conjunction(2,1/2)\n"
              "flow add table=27,priority=0 actions=goto_table:29\n");
}

TEST(FlowMods, AChangedCookieIsAnAddOfTheSameMatch) {
    auto desired = kTable;
    desired[2].cookie = 0x10006b05;
    auto mods = flowModsBetween(kTable, desired);
    ASSERT_TRUE(mods);
    EXPECT_EQ(*mods, "flow add table=27,priority=100,cookie=0x10006b05,ip,nw_dst=10.244.1.5 actions=drop\n");
}

TEST(FlowMods, TheWholeTableOnlyWhereNothingIsInstalled) {
    EXPECT_FALSE(flowModsBetween({}, kTable)) << "nothing installed";
    // A table mostly new is still its difference: every old flow but one
    // deleted, the new one added, the unchanged one left alone.
    auto mostlyNew = flowModsBetween(kTable, {{Table::Ingress, 0, 0, "", "drop"}, {Table::PodNeighbour, 1, 0, "", "drop"}});
    ASSERT_TRUE(mostlyNew);
    EXPECT_EQ(std::count(mostlyNew->begin(), mostlyNew->end(), '\n'), 8) << *mostlyNew;
    EXPECT_EQ(mostlyNew->find("flow add table=0,priority=0"), std::string::npos) << *mostlyNew;
    EXPECT_NE(mostlyNew->find("flow add table=5,priority=1 actions=drop\n"), std::string::npos) << *mostlyNew;
    auto same = flowModsBetween(kTable, kTable);
    ASSERT_TRUE(same);
    EXPECT_EQ(*same, "");
}
