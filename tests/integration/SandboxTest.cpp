// The sandbox every OVS integration test stands on: a real userspace OVS in a
// private network namespace, torn down afterwards.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/Process.hpp"
#include "tests/support/OvsSandbox.hpp"

using kovs::test::OvsSandbox;

TEST(OvsSandbox, RunsUserspaceBridgeInPrivateNetns) {
    std::string dir;
    {
        OvsSandbox ovs;
        dir = ovs.dir();
        ovs.vsctl({"add-br", "br-test", "--", "set", "bridge", "br-test", "datapath_type=netdev"});
        EXPECT_EQ(ovs.vsctl({"get", "bridge", "br-test", "datapath_type"}), "netdev\n");
        // The userspace datapath made a tap device for the bridge, in our netns.
        auto link = kovs::runProcess({"ip", "link", "show", "br-test"});
        EXPECT_EQ(link.exitCode, 0) << link.err;
        EXPECT_NE(ovs.appctl({"dpif/show"}).find("netdev@ovs-netdev"), std::string::npos);
    }
    EXPECT_FALSE(std::filesystem::exists(dir));
}
