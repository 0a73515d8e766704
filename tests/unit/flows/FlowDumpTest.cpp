// Reading `ovs-ofctl dump-flows` back: statistics out, cookies counted.
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "flows/FlowDump.hpp"

using kovs::flows::parseFlowDump;

namespace {

const char* kDump =
    "NXST_FLOW reply (xid=0x4):\n"
    " cookie=0x0, duration=5.487s, table=0, n_packets=34, n_bytes=2275, idle_age=3, priority=200,in_port=1 actions=resubmit(,10)\n"
    " cookie=0x6b01, duration=5.487s, table=0, n_packets=7, n_bytes=700, idle_age=3, hard_age=2, priority=190,in_port=2 actions=drop\n"
    " cookie=0x6b02, duration=5.1s, table=0, n_packets=1, n_bytes=60, priority=190,in_port=7 actions=drop\n"
    " cookie=0x6b02, duration=5.1s, table=0, n_packets=2, n_bytes=60, priority=190,in_port=8 actions=drop\n"
    " cookie=0x0, duration=5.487s, table=10, n_packets=248, n_bytes=216445, idle_age=3, priority=100,ip actions=ct(table=20,zone=107)\n";

}  // namespace

TEST(FlowDump, LeavesTheStatisticsOutAndSortsTheFlows) {
    auto d = parseFlowDump(kDump);
    EXPECT_EQ(d.count, 5u);
    EXPECT_EQ(d.flows,
              "cookie=0x0, table=0, priority=200,in_port=1 actions=resubmit(,10)\n"
              "cookie=0x0, table=10, priority=100,ip actions=ct(table=20,zone=107)\n"
              "cookie=0x6b01, table=0, priority=190,in_port=2 actions=drop\n"
              "cookie=0x6b02, table=0, priority=190,in_port=7 actions=drop\n"
              "cookie=0x6b02, table=0, priority=190,in_port=8 actions=drop\n");
    EXPECT_EQ(d.packetsByCookie.at(0x6b01), 7u);
    EXPECT_EQ(d.packetsByCookie.at(0x6b02), 3u);
    EXPECT_EQ(d.packetsByCookie.at(0), 282u);
}

TEST(FlowDump, SameTableSameTextWhateverTheCounters) {
    std::string later = kDump;
    for (auto [from, to] : {std::pair{"n_packets=34", "n_packets=99"}, {"duration=5.487s", "duration=905.1s"}}) {
        for (size_t p; (p = later.find(from)) != std::string::npos;) later.replace(p, std::string(from).size(), to);
    }
    EXPECT_EQ(parseFlowDump(later).flows, parseFlowDump(kDump).flows);
}

TEST(FlowDump, AnEmptyTableAndGarbage) {
    EXPECT_EQ(parseFlowDump("NXST_FLOW reply (xid=0x4):\n").count, 0u);
    EXPECT_THROW(parseFlowDump(" cookie=0x0, duration=1s, table=0, n_packets=x, priority=1 actions=drop\n"), kovs::Error);
    EXPECT_THROW(parseFlowDump(" cookie=0x0, garbage, priority=1 actions=drop\n"), kovs::Error);
}
