// The sandbox every OVS integration test stands on: a real userspace OVS in a
// private network namespace, torn down afterwards.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "base/Process.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"

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

// A test binary killed before its destructors run must not leave its OVS
// daemons behind: the sandbox's watchdog kills them and removes the directory.
TEST(OvsSandbox, DaemonsDieWithAKilledTestProcess) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(fds[0]);
        OvsSandbox* ovs = new OvsSandbox();  // never destroyed
        std::string line = ovs->dir() + " " + std::to_string(ovs->vswitchdPid()) + "\n";
        if (::write(fds[1], line.data(), line.size()) < 0) ::_exit(1);
        ::pause();
    }
    ::close(fds[1]);
    char buf[256] = {};
    ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
    ::close(fds[0]);
    ASSERT_GT(n, 0) << "the child made no sandbox";
    std::istringstream in(buf);
    std::string dir;
    pid_t vswitchd = -1;
    in >> dir >> vswitchd;
    ASSERT_TRUE(std::filesystem::exists(dir));
    ASSERT_EQ(::kill(vswitchd, 0), 0);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    EXPECT_TRUE(kovs::test::pollUntil([&] { return ::kill(vswitchd, 0) != 0 && !std::filesystem::exists(dir); },
                                      std::chrono::seconds(15)))
        << "ovs-vswitchd " << vswitchd << " or " << dir << " outlived the killed test process";
}
