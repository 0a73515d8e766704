#include "ovs/UnixctlClient.hpp"

#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "base/Process.hpp"

#include <unistd.h>
#include "tests/support/OvsSandbox.hpp"

using kovs::UnixctlClient;
using kovs::UnixctlCommand;
using kovs::test::OvsSandbox;

TEST(UnixctlClient, RouteShowAndErrorReply) {
    OvsSandbox ovs;
    UnixctlClient c(ovs.dir());
    auto text = c.call("ovs/route/show");
    EXPECT_NE(text.find("Route Table"), std::string::npos) << text;
    EXPECT_EQ(c.pid(), ovs.vswitchdPid());
    try {
        c.call("ovs/route/add", {"10.0.0.9/32", "br-nonexistent"});
        FAIL() << "route to a missing bridge accepted";
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "ovs/route/add 10.0.0.9/32 br-nonexistent: Error while inserting route.");
    }
    try {
        c.call("no/such/command");
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no/such/command: \"no/such/command\" is not a valid command"),
                  std::string::npos)
            << e.what();
    }
}

TEST(UnixctlClient, RoutesAddedOverUnixctlAreVisibleToAppctl) {
    OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-phy", "--", "set", "Bridge", "br-phy", "datapath_type=netdev"});
    kovs::runChecked({"ip", "link", "set", "br-phy", "up"});
    kovs::runChecked({"ip", "addr", "add", "172.31.0.1/24", "dev", "br-phy"});
    UnixctlClient c(ovs.dir());
    // vswitchd learns the address asynchronously; poll for the route to be accepted.
    std::string last;
    bool ok = false;
    for (int i = 0; i < 200 && !ok; ++i) {
        try {
            c.call("ovs/route/add", {"172.31.0.9/32", "br-phy"});
            ok = true;
        } catch (const kovs::Error& e) {
            last = e.what();
            usleep(10000);
        }
    }
    ASSERT_TRUE(ok) << last;
    EXPECT_NE(ovs.appctl({"ovs/route/show"}).find("User: 172.31.0.9/32 dev br-phy"), std::string::npos)
        << ovs.appctl({"ovs/route/show"});
}

TEST(UnixctlClient, PipelinesManyCallsOnOneConnection) {
    OvsSandbox ovs;
    UnixctlClient c(ovs.dir());
    std::vector<UnixctlCommand> cmds;
    for (int i = 0; i < 200; ++i) cmds.push_back(i % 50 == 7 ? UnixctlCommand{"bogus/cmd", {}} : UnixctlCommand{"version", {}});
    auto replies = c.pipeline(cmds);
    ASSERT_EQ(replies.size(), 200u);
    for (size_t i = 0; i < replies.size(); ++i) {
        if (i % 50 == 7) {
            EXPECT_FALSE(replies[i].ok) << i;
        } else {
            EXPECT_TRUE(replies[i].ok) << i << ": " << replies[i].text;
            EXPECT_NE(replies[i].text.find("ovs-vswitchd"), std::string::npos) << replies[i].text;
        }
    }
}

TEST(UnixctlClient, NoticesVswitchdRestart) {
    OvsSandbox ovs;
    UnixctlClient c(ovs.dir());
    std::vector<std::pair<pid_t, pid_t>> restarts;
    c.setRestartHandler([&](pid_t o, pid_t n) { restarts.emplace_back(o, n); });
    c.call("version");
    pid_t first = c.pid();
    EXPECT_FALSE(c.targetRestarted());
    ovs.killVswitchd(9);
    EXPECT_THROW(c.call("version"), kovs::Error);  // dead: clear error, no hang
    ovs.startVswitchd();
    EXPECT_TRUE(c.targetRestarted());
    c.call("version");
    EXPECT_NE(c.pid(), first);
    EXPECT_EQ(c.pid(), ovs.vswitchdPid());
    ASSERT_EQ(restarts.size(), 1u);
    EXPECT_EQ(restarts[0], std::make_pair(first, c.pid()));
}

TEST(UnixctlClient, MissingDaemonIsAClearError) {
    UnixctlClient c("/nonexistent-rundir");
    try {
        c.call("version");
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "ovs-vswitchd: no pid in /nonexistent-rundir/ovs-vswitchd.pid (is it running?)");
    }
}
