// runProcess and ChildProcess: stdin, stdout and stderr together, exit codes
// and signals, a child that stops reading its input early costs the caller
// nothing (no SIGPIPE), a deadline that kills even a child ignoring SIGTERM
// (and its grandchildren), and an asynchronous child that leaves the loop free.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "base/Error.hpp"
#include "base/EventLoop.hpp"

#include "tests/integration/support/Emulator.hpp"
#include "base/Process.hpp"
#include "tests/support/AgentSignals.hpp"
#include "tests/support/Poll.hpp"

using namespace kovs;
using namespace std::chrono_literals;

namespace {

bool processGone(pid_t pid) { return ::kill(pid, 0) < 0 && errno == ESRCH; }

// A zombie still answers kill(pid, 0): the ones reparented to init need a moment.
bool eventuallyGone(pid_t pid) { return kovs::test::pollUntil([&] { return processGone(pid); }, 10s); }

// Runs `loop` until `done` or a generous deadline (the machine may be slow).
void runUntil(EventLoop& loop, const std::function<bool()>& done) { loop.runUntil(done, 60s); }

}  // namespace

TEST(Process, FeedsStdinAndCollectsBothOutputs) {
    ProcessOptions o;
    o.stdinData = std::string(1 << 20, 'k');
    auto r = runProcess({"sh", "-c", "wc -c; echo done >&2"}, o);
    EXPECT_EQ(r.exitCode, 0);
    EXPECT_EQ(r.out, "1048576\n");
    EXPECT_EQ(r.err, "done\n");
}

TEST(Process, AChildThatIgnoresItsInputDoesNotKillTheCaller) {
    ProcessOptions o;
    o.stdinData = std::string(4 << 20, 'k');  // far more than a pipe or socket buffer holds
    for (int i = 0; i < 20; ++i) {
        auto r = runProcess({"sh", "-c", "echo refused >&2; exit 3"}, o);
        EXPECT_EQ(r.exitCode, 3);
        EXPECT_EQ(r.err, "refused\n");
    }
}

TEST(Process, ReportsExitCodesAndSignals) {
    auto r = runProcess({"sh", "-c", "echo no such thing >&2; exit 7"});
    EXPECT_EQ(r.exitCode, 7);
    EXPECT_EQ(r.signal, 0);
    EXPECT_EQ(describeFailure({"ip", "link", "del", "x"}, r), "ip link del x: exit 7: no such thing");
    auto s = runProcess({"sh", "-c", "kill -TERM $$"});
    EXPECT_EQ(s.exitCode, -1);
    EXPECT_EQ(s.signal, SIGTERM);
    EXPECT_FALSE(s.killedAfter);
    EXPECT_EQ(describeFailure({"sh"}, s), "sh: killed by signal 15 (Terminated)");
    try {
        runChecked({"sh", "-c", "echo bad >&2; exit 2"});
        FAIL() << "runChecked returned on exit 2";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "sh -c echo bad >&2; exit 2: exit 2: bad");
    }
    EXPECT_EQ(runChecked({"printf", "%s", "x y"}), "x y");
}

// The agent blocks SIGTERM/SIGINT and ignores SIGPIPE; its children must not
// inherit that (SigBlk and SigIgn in /proc/<pid>/status are hex masks).
TEST(Process, ChildrenStartWithNoSignalBlockedOrIgnored) {
    ProcessResult blocked, ignored;
    {
        kovs::test::AgentSignals asInTheAgent;
        blocked = runProcess({"awk", "/^SigBlk/ { print $2 }", "/proc/self/status"});
        ignored = runProcess({"awk", "/^SigIgn/ { print $2 }", "/proc/self/status"});
    }
    ASSERT_TRUE(blocked.ok() && ignored.ok()) << blocked.err << ignored.err;
    EXPECT_EQ(blocked.out, "0000000000000000\n");
    // Only SIGPIPE is ours to check: the test runner may ignore others.
    EXPECT_EQ(std::stoull(ignored.out, nullptr, 16) & (1ull << (SIGPIPE - 1)), 0u) << ignored.out;
}

TEST(Process, NamesTheProgramThatCannotStart) {
    if (kovs::test::underEmulator()) GTEST_SKIP() << kovs::test::kQemuNoVforkError;
    try {
        runProcess({"/nonexistent/kovs-no-such-program"});
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "exec /nonexistent/kovs-no-such-program: No such file or directory");
    }
    EXPECT_THROW(runProcess({}), Error);
    EventLoop loop;
    EXPECT_THROW(ChildProcess(loop, {"/nonexistent/kovs-no-such-program"}, {}, [](ProcessResult) {}), Error);
}

// A child that ignores SIGTERM, with a grandchild holding its stdout: both
// die at the deadline, and runProcess says so instead of hanging on the pipe.
TEST(Process, KillsAHungChildAndItsGrandchildrenAtTheDeadline) {
    ProcessOptions o;
    o.timeout = 300ms;
    try {
        runProcess({"sh", "-c", "trap '' TERM; sleep 600 & sleep 600"}, o);
        FAIL() << "a child that never exits was waited for";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "sh -c trap '' TERM; sleep 600 & sleep 600: killed after 300 ms");
    }

    EventLoop loop;
    std::optional<ProcessResult> res;
    ChildProcess child(loop, {"sh", "-c", "trap '' TERM; sleep 600 & echo $!; wait"}, o,
                       [&](ProcessResult r) { res = std::move(r); });
    runUntil(loop, [&] { return res.has_value(); });
    ASSERT_TRUE(res);
    ASSERT_TRUE(res->killedAfter);
    EXPECT_EQ(res->killedAfter->count(), 300);
    EXPECT_EQ(res->signal, SIGKILL);
    EXPECT_EQ(describeFailure({"ovs-ofctl", "dump-flows", "br-int"}, *res), "ovs-ofctl dump-flows br-int: killed after 300 ms");
    pid_t grandchild = std::stoi(res->out);
    EXPECT_TRUE(eventuallyGone(grandchild)) << "grandchild " << grandchild << " outlived the deadline";
}

TEST(ChildProcess, CollectsOutputAndExitCodeOnTheLoop) {
    EventLoop loop;
    ProcessOptions o;
    o.stdinData = std::string(3 << 20, 'x');  // larger than any pipe: fed and drained as the loop runs
    std::optional<ProcessResult> res;
    ChildProcess child(loop, {"sh", "-c", "wc -c; echo err >&2; exit 5"}, o, [&](ProcessResult r) { res = std::move(r); });
    EXPECT_TRUE(child.running());
    EXPECT_GT(child.pid(), 0);
    runUntil(loop, [&] { return res.has_value(); });
    ASSERT_TRUE(res);
    EXPECT_EQ(res->exitCode, 5);
    EXPECT_EQ(res->out, "3145728\n");
    EXPECT_EQ(res->err, "err\n");
    EXPECT_FALSE(res->killedAfter);
    EXPECT_FALSE(child.running());
    EXPECT_EQ(child.pid(), -1);
}

// The child blocks on a FIFO that only a timer on the same loop writes to:
// it can only finish if the loop keeps running while the child is alive.
TEST(ChildProcess, TheLoopRunsWhileTheChildDoes) {
    auto dir = std::filesystem::temp_directory_path() / ("kovs-child-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto fifo = (dir / "fifo").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EventLoop loop;
    std::optional<ProcessResult> res;
    ChildProcess child(loop, {"cat", fifo}, {}, [&](ProcessResult r) { res = std::move(r); });
    bool timerRan = false;
    loop.after(10ms, [&] {
        timerRan = true;
        std::ofstream(fifo) << "from the timer\n";
    });
    runUntil(loop, [&] { return res.has_value(); });
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(res);
    EXPECT_TRUE(timerRan);
    EXPECT_EQ(res->out, "from the timer\n");
    EXPECT_TRUE(res->ok()) << res->err;
}

TEST(ChildProcess, DestroyedWhileRunningKillsAndReapsWithoutTheCallback) {
    EventLoop loop;
    bool called = false;
    pid_t pid;
    {
        ChildProcess child(loop, {"sh", "-c", "trap '' TERM; sleep 600"}, {}, [&](ProcessResult) { called = true; });
        pid = child.pid();
        ASSERT_GT(pid, 0);
        loop.runUntil([] { return false; }, 20ms);
    }
    // Reaped already: no zombie left for anyone to collect.
    EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
    EXPECT_TRUE(processGone(pid));
    loop.runUntil([] { return false; }, 50ms);
    EXPECT_FALSE(called);
}

TEST(ChildProcess, MovedHandlesKeepTheirChildAndTheCallbackMayDestroyIt) {
    EventLoop loop;
    std::optional<ChildProcess> holder;
    std::optional<ProcessResult> res;
    ChildProcess first(loop, {"echo", "moved"}, {}, [&](ProcessResult r) {
        res = std::move(r);
        holder.reset();  // destroys the handle whose callback this is
    });
    holder.emplace(std::move(first));
    EXPECT_FALSE(first.running());
    runUntil(loop, [&] { return res.has_value(); });
    ASSERT_TRUE(res);
    EXPECT_EQ(res->out, "moved\n");
    EXPECT_FALSE(holder);
}

TEST(ChildProcess, ManyAtOnce) {
    EventLoop loop;
    constexpr int kChildren = 64;
    std::vector<ChildProcess> children;
    std::vector<std::optional<ProcessResult>> results(kChildren);
    size_t finished = 0;
    for (int i = 0; i < kChildren; ++i) {
        ProcessOptions o;
        o.stdinData = std::to_string(i) + "\n";
        children.emplace_back(loop, std::vector<std::string>{"sh", "-c", "read n; echo out$n; echo err$n >&2; exit $((n % 7))"},
                              o, [&, i](ProcessResult r) {
                                  results[static_cast<size_t>(i)] = std::move(r);
                                  ++finished;
                              });
    }
    runUntil(loop, [&] { return finished == kChildren; });
    ASSERT_EQ(finished, static_cast<size_t>(kChildren));
    for (int i = 0; i < kChildren; ++i) {
        const auto& r = results[static_cast<size_t>(i)];
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->out, "out" + std::to_string(i) + "\n");
        EXPECT_EQ(r->err, "err" + std::to_string(i) + "\n");
        EXPECT_EQ(r->exitCode, i % 7);
    }
}

// Started ahead of need: the child waits on its stdin with no deadline
// running (it outlives a timeout it would otherwise hit), then gets its input
// in one go, the new callback reports, and the deadline counts from there.
TEST(ChildProcess, InputLaterWaitsWithoutADeadlineAndThenRunsWithOne) {
    EventLoop loop;
    ProcessOptions o;
    o.inputLater = true;
    o.timeout = 50ms;
    bool firstCalled = false;
    ChildProcess child(loop, {"sh", "-c", "wc -c; sleep \"${SLEEP:-0}\""}, o, [&](ProcessResult) { firstCalled = true; });
    loop.runUntil([] { return false; }, 150ms);  // three deadlines' worth
    ASSERT_TRUE(child.running());
    std::optional<ProcessResult> res;
    child.supplyInput("twelve bytes", [&](ProcessResult r) { res = std::move(r); });
    EXPECT_THROW(child.supplyInput("again", [](ProcessResult) {}), Error);
    runUntil(loop, [&] { return res.has_value(); });
    ASSERT_TRUE(res);
    EXPECT_FALSE(firstCalled);
    EXPECT_TRUE(res->ok()) << describeFailure({"sh"}, *res);
    EXPECT_EQ(res->out, "12\n");

    // The deadline counts once the input is there.
    o.env = std::map<std::string, std::string>{{"SLEEP", "600"}, {"PATH", "/usr/bin:/bin"}};
    std::optional<ProcessResult> slow;
    ChildProcess sleeper(loop, {"sh", "-c", "cat >/dev/null; sleep \"$SLEEP\""}, o, [](ProcessResult) {});
    loop.runUntil([] { return false; }, 100ms);
    ASSERT_TRUE(sleeper.running());
    sleeper.supplyInput("", [&](ProcessResult r) { slow = std::move(r); });
    runUntil(loop, [&] { return slow.has_value(); });
    ASSERT_TRUE(slow);
    EXPECT_TRUE(slow->killedAfter);

    // A child that was not started with inputLater cannot be given input.
    ChildProcess plain(loop, {"true"}, {}, [](ProcessResult) {});
    EXPECT_THROW(plain.supplyInput("x", [](ProcessResult) {}), Error);
}
