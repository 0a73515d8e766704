// kovs-agent's SIGTERM handling, in a child process each (signals are
// process-wide): the loop stops wherever the main thread is, and a main
// thread busy outside the loop is cut short instead of waiting for SIGKILL.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "agent/TerminationSignals.hpp"
#include "tests/support/Poll.hpp"

using namespace kovs;
using namespace std::chrono_literals;

namespace {

// Runs body in a child, SIGTERMs it once it is ready (it writes a byte to the
// pipe), and returns its wait status; -1 if it outlived `timeout`.
template <typename Body>
int statusAfterSigterm(Body body, std::chrono::milliseconds timeout) {
    int ready[2];
    if (::pipe(ready) != 0) return -2;
    pid_t pid = ::fork();
    if (pid == 0) {
        ::close(ready[0]);
        body(ready[1]);
        ::_exit(99);
    }
    ::close(ready[1]);
    char c;
    if (::read(ready[0], &c, 1) != 1) return -3;
    ::close(ready[0]);
    ::kill(pid, SIGTERM);
    int status = 0;
    bool ended = test::pollUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, timeout, 2ms);
    if (!ended) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return -1;
    }
    return status;
}

}  // namespace

// The normal way: the signal stops run(), the destructors run, main returns.
TEST(TerminationSignals, StopTheLoopAndLetMainReturn) {
    int status = statusAfterSigterm([](int ready) {
        EventLoop loop;
        agent::TerminationSignals signals(loop, 30s);
        loop.post([ready] { [[maybe_unused]] auto n = ::write(ready, "x", 1); });
        loop.run();
        ::_exit(signals.received() == SIGTERM ? 7 : 8);
    }, 20s);
    ASSERT_GE(status, 0) << "the child did not end";
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 7) << "run() returned, but not because of SIGTERM";
}

// A main thread inside a step that never returns to the loop (here a 60 s
// sleep): the process ends once the cut-short time is over, with status 0,
// long before the step would have.
TEST(TerminationSignals, CutShortAStepThatDoesNotReturnToTheLoop) {
    int status = statusAfterSigterm([](int ready) {
        EventLoop loop;
        agent::TerminationSignals signals(loop, 200ms);
        [[maybe_unused]] auto n = ::write(ready, "x", 1);
        std::this_thread::sleep_for(60s);
    }, 30s);
    ASSERT_GE(status, 0) << "the child sat out its 60 s step";
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Without a signal, the destructor ends the waiting thread and nothing exits early.
TEST(TerminationSignals, WithoutASignalTheDestructorJustEndsTheThread) {
    EventLoop loop;
    {
        agent::TerminationSignals signals(loop, 100ms);
        EXPECT_EQ(signals.received(), 0);
    }
    EXPECT_FALSE(loop.stopped());
    // SIGTERM is still blocked here (the mask stays); put it back for the other tests.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    timespec zero{0, 0};
    while (sigtimedwait(&sigs, nullptr, &zero) > 0) {
    }
    pthread_sigmask(SIG_UNBLOCK, &sigs, nullptr);
}
