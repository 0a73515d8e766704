// runProcess: stdin, stdout and stderr together, and a child that stops
// reading its input early costs the caller nothing (no SIGPIPE).
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/AgentSignals.hpp"

using namespace kovs;

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
    EXPECT_THROW(runProcess({"/nonexistent/kovs-no-such-program"}), Error);
    EXPECT_THROW(runProcess({}), Error);
}
