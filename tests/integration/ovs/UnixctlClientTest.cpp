// UnixctlClient against a real ovs-vswitchd (OvsSandbox, private netns):
// replies and errors, pipelining, a restart re-opens the connection, and a
// stopped vswitchd costs timeouts, never a blocked loop.
#include "ovs/UnixctlClient.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <optional>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"

using kovs::ovs::BlockingUnixctlClient;
using kovs::EventLoop;
using kovs::ovs::UnixctlClient;
using kovs::ovs::UnixctlCommand;
using kovs::ovs::UnixctlReplies;
using kovs::test::OvsSandbox;
using namespace std::chrono_literals;

namespace {

// Runs one pipeline on `loop` and waits (generously) for its replies.
std::optional<UnixctlReplies> ask(EventLoop& loop, UnixctlClient& c, std::vector<UnixctlCommand> cmds) {
    std::optional<UnixctlReplies> out;
    c.pipeline(std::move(cmds), [&](UnixctlReplies r) { out = std::move(r); });
    loop.runUntil([&] { return out.has_value(); }, 60s);
    return out;
}

}  // namespace

TEST(UnixctlClient, RouteShowAndErrorReply) {
    OvsSandbox ovs;
    BlockingUnixctlClient c(ovs.dir());
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
    BlockingUnixctlClient c(ovs.dir());
    // vswitchd learns the address asynchronously; poll for the route to be accepted.
    std::string last;
    bool ok = kovs::test::pollUntil(
        [&] {
            try {
                c.call("ovs/route/add", {"172.31.0.9/32", "br-phy"});
                return true;
            } catch (const kovs::Error& e) {
                last = e.what();
                return false;
            }
        },
        10s, 10ms);
    ASSERT_TRUE(ok) << last;
    EXPECT_NE(ovs.appctl({"ovs/route/show"}).find("User: 172.31.0.9/32 dev br-phy"), std::string::npos)
        << ovs.appctl({"ovs/route/show"});
}

TEST(UnixctlClient, PipelinesManyCallsOnOneConnection) {
    OvsSandbox ovs;
    EventLoop loop;
    UnixctlClient c(loop, ovs.dir());
    std::vector<UnixctlCommand> cmds;
    for (int i = 0; i < 200; ++i) cmds.push_back(i % 50 == 7 ? UnixctlCommand{"bogus/cmd", {}} : UnixctlCommand{"version", {}});
    auto r = ask(loop, c, cmds);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->pid, ovs.vswitchdPid());
    EXPECT_EQ(r->unreachable, "");
    ASSERT_EQ(r->replies.size(), 200u);
    for (size_t i = 0; i < r->replies.size(); ++i) {
        if (i % 50 == 7) {
            EXPECT_FALSE(r->replies[i].ok) << i;
        } else {
            EXPECT_TRUE(r->replies[i].ok) << i << ": " << r->replies[i].text;
            EXPECT_NE(r->replies[i].text.find("ovs-vswitchd"), std::string::npos) << r->replies[i].text;
        }
    }
    EXPECT_FALSE(r->allOk());
}

TEST(UnixctlClient, ReopensItsConnectionWhenVswitchdRestarts) {
    OvsSandbox ovs;
    EventLoop loop;
    UnixctlClient c(loop, ovs.dir());
    auto first = ask(loop, c, {{"version", {}}});
    ASSERT_TRUE(first && first->allOk());
    pid_t firstPid = first->pid;
    EXPECT_EQ(firstPid, ovs.vswitchdPid());

    ovs.killVswitchd(9);
    auto dead = ask(loop, c, {{"version", {}}});  // a clear error, no hang
    ASSERT_TRUE(dead);
    EXPECT_FALSE(dead->allOk());
    EXPECT_FALSE(dead->replies.at(0).text.empty());

    ovs.startVswitchd();
    auto again = ask(loop, c, {{"version", {}}});
    ASSERT_TRUE(again && again->allOk()) << again->unreachable << again->replies.at(0).text;
    EXPECT_NE(again->pid, firstPid);
    EXPECT_EQ(again->pid, ovs.vswitchdPid());
    EXPECT_EQ(c.pid(), again->pid);
}

// SIGSTOP: vswitchd's socket still accepts, nobody answers. Each request
// times out while a timer on the same loop keeps firing; after SIGCONT the
// same connection answers again.
TEST(UnixctlClient, AStoppedVswitchdTimesOutWithoutBlockingTheLoop) {
    OvsSandbox ovs;
    EventLoop loop;
    UnixctlClient c(loop, ovs.dir(), "ovs-vswitchd", 500ms);
    ASSERT_TRUE(ask(loop, c, {{"version", {}}})->allOk());
    pid_t pid = ovs.vswitchdPid();
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);
    struct Resume {
        pid_t pid;
        ~Resume() { ::kill(pid, SIGCONT); }
    } resume{pid};

    int ticks = 0;
    std::optional<UnixctlReplies> stopped;
    c.pipeline({{"version", {}}, {"ovs/route/show", {}}}, [&](UnixctlReplies r) { stopped = std::move(r); });
    std::function<void()> tick = [&] {
        if (!stopped) ++ticks;
        loop.after(10ms, tick);
    };
    loop.after(10ms, tick);
    loop.runUntil([&] { return stopped.has_value(); }, 60s);
    ASSERT_TRUE(stopped);
    EXPECT_EQ(stopped->replies, (std::vector<kovs::ovs::UnixctlReply>{{false, "timed out"}, {false, "timed out"}}));
    EXPECT_GT(ticks, 0) << "the loop did not run while vswitchd was stopped";

    ::kill(pid, SIGCONT);
    auto back = ask(loop, c, {{"version", {}}});
    ASSERT_TRUE(back);
    EXPECT_TRUE(back->allOk()) << back->replies.at(0).text;
    EXPECT_EQ(back->pid, pid);
}

TEST(UnixctlClient, DestroyedWithRequestsPendingRunsNoCallback) {
    OvsSandbox ovs;
    EventLoop loop;
    pid_t pid = ovs.vswitchdPid();
    ::kill(pid, SIGSTOP);
    bool called = false;
    {
        UnixctlClient c(loop, ovs.dir());
        c.pipeline({{"version", {}}}, [&](UnixctlReplies) { called = true; });
        loop.runUntil([] { return false; }, 50ms);
    }
    ::kill(pid, SIGCONT);
    loop.runUntil([] { return false; }, 100ms);
    EXPECT_FALSE(called);
}

TEST(UnixctlClient, MissingDaemonIsAClearError) {
    BlockingUnixctlClient c("/nonexistent-rundir");
    try {
        c.call("version");
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "ovs-vswitchd: no pid in /nonexistent-rundir/ovs-vswitchd.pid (is it running?)");
    }
    EventLoop loop;
    UnixctlClient async(loop, "/nonexistent-rundir");
    auto r = ask(loop, async, {{"version", {}}, {"ovs/route/show", {}}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->pid, -1);
    EXPECT_EQ(r->unreachable, "ovs-vswitchd: no pid in /nonexistent-rundir/ovs-vswitchd.pid (is it running?)");
    ASSERT_EQ(r->replies.size(), 2u);
    EXPECT_EQ(r->replies[1].text, r->unreachable);
}
