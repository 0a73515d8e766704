// The standalone flow table installed into a real userspace OVS bridge.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "flows/FlowTable.hpp"
#include "tests/support/OvsSandbox.hpp"

using kovs::FlowInputs;
using kovs::FlowTable;
using kovs::test::OvsSandbox;

namespace {

int countFlows(const std::string& dump) {
    int n = 0;
    for (size_t p = 0; (p = dump.find("priority=", p)) != std::string::npos; ++p) ++n;
    return n;
}

// br-int with the tunnel port at ofport 2, as the agent makes it.
class FlowTableTest : public ::testing::Test {
protected:
    FlowTableTest() {
        ovs.vsctl({"add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev", "fail_mode=secure",
                   "--", "add-port", "br-int", "tun0", "--", "set", "interface", "tun0", "type=vxlan",
                   "options:remote_ip=flow", "options:key=flow", "ofport_request=2"});
    }
    static FlowInputs baseInputs() {
        FlowInputs in;
        in.tunnelOfport = 2;
        in.gateway = {"aa:bb:cc:00:00:01", 65534};
        in.localCidr = "10.244.1.0/24";
        in.remotes = {{"10.244.2.0/24", "172.18.0.3"}};
        return in;
    }
    OvsSandbox ovs;
};

}  // namespace

TEST_F(FlowTableTest, InstallsAtomicallyAndOnlyWhenChanged) {
    FlowInputs in = baseInputs();
    FlowTable table("br-int", ovs.dir());

    EXPECT_TRUE(table.install(in));
    auto dump = ovs.ofctl({"dump-flows", "br-int"});
    EXPECT_EQ(countFlows(dump), 5) << dump;
    // 172.18.0.3 = 0xac120003: OVS shows set_field on tun_dst as a load.
    EXPECT_NE(dump.find("nw_dst=10.244.2.0/24 actions=load:0xac120003->NXM_NX_TUN_IPV4_DST[],output:2"), std::string::npos) << dump;

    EXPECT_FALSE(table.install(in)) << "an unchanged table must not be re-sent";

    in.remotes = {{"10.244.3.0/24", "172.18.0.4"}};
    EXPECT_TRUE(table.install(in));
    dump = ovs.ofctl({"dump-flows", "br-int"});
    EXPECT_EQ(dump.find("10.244.2.0/24"), std::string::npos) << "the old peer's flows are gone:\n" << dump;
    EXPECT_NE(dump.find("nw_dst=10.244.3.0/24"), std::string::npos) << dump;

    // Someone wipes the table: a forced install (what the agent does after a
    // vswitchd restart or on resync) puts it back.
    ovs.ofctl({"del-flows", "br-int"});
    EXPECT_TRUE(table.install(in, /*force=*/true));
    EXPECT_EQ(countFlows(ovs.ofctl({"dump-flows", "br-int"})), 5);
}

// The agent force-installs on every resync. An unchanged table must come
// through untouched: a modified flow loses its counters, and OVS revalidates
// its datapath flows. OVS tells by the flow's age (duration), which a modify
// resets.
TEST_F(FlowTableTest, AForcedReinstallOfTheSameTableModifiesNoFlow) {
    FlowInputs in = baseInputs();
    in.pods = {{"10.244.1.5", "aa:bb:cc:00:00:05", 7}};
    FlowTable table("br-int", ovs.dir());
    ASSERT_TRUE(table.install(in));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ASSERT_TRUE(table.install(in, /*force=*/true));
    auto dump = ovs.ofctl({"dump-flows", "br-int"});
    EXPECT_EQ(countFlows(dump), 6) << dump;
    std::istringstream lines(dump);
    for (std::string line; std::getline(lines, line);) {
        auto at = line.find("duration=");
        if (at == std::string::npos) continue;
        EXPECT_GE(std::stod(line.substr(at + 9)), 1.0) << "modified by the reinstall: " << line;
    }
}

TEST(FlowTable, ReportsOvsErrorsWithTheBridgeName) {
    OvsSandbox ovs;
    FlowInputs in;
    in.tunnelOfport = 2;
    in.gateway = {"aa:bb:cc:00:00:01", 1};
    in.localCidr = "10.244.1.0/24";
    FlowTable table("br-missing", ovs.dir());
    try {
        table.install(in);
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("replace-flows on br-missing"), std::string::npos) << e.what();
    }
}
