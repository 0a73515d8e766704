#pragma once
// Runs a program from an argv vector (never through a shell) with a
// deadline, and collects its output: ovs-ofctl, IPAM plugins, iproute2, tests.
//
// ChildProcess runs it on an EventLoop (pidfd and non-blocking pipes), so a
// slow or hung child never stalls the loop; runProcess() is the same thing on
// a private loop, for callers that may block (kovs-cni, CLIs, start-up).
//
// The child gets its own process group, and at the deadline that whole group
// is killed with SIGKILL: a hung child cannot be asked to leave (it may
// ignore SIGTERM, or be stopped), and grandchildren of a shell would otherwise
// keep running and hold our pipes open. Output is collected until the child
// itself exits; descendants that outlive it are not waited for.
#include <spawn.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kovs {

class EventLoop;

struct ProcessOptions {
    std::optional<std::string> stdinData;
    // The child starts now but its stdin stays open, and its deadline unarmed,
    // until ChildProcess::supplyInput(): a program started ahead of need
    // (exec costs 15-20 ms on a small node) that waits for its input.
    // stdinData is ignored then.
    bool inputLater = false;
    // Replaces the environment when set; otherwise the child inherits ours.
    std::optional<std::map<std::string, std::string>> env;
    // The child's process group is SIGKILLed when the child has not exited by then.
    std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

struct ProcessResult {
    int exitCode = -1;  // -1 when ended by a signal
    int signal = 0;     // the signal that ended it; 0 when it exited
    // Set when we killed it at its deadline (ProcessOptions::timeout).
    std::optional<std::chrono::milliseconds> killedAfter;
    std::string out;
    std::string err;
    bool ok() const { return exitCode == 0; }
};

// Why `r` is not a success, naming the program: "ovs-ofctl dump-flows br-int:
// killed after 5000 ms", "ip link del x: exit 1: Cannot find device "x"",
// "sleep 9: killed by signal 15". Empty when r.ok().
std::string describeFailure(const std::vector<std::string>& argv, const ProcessResult& r);

// Blocks until the child exits. Throws kovs::Error when the program cannot be
// started at all, and when it was killed at its deadline (there is no exit
// status to return then); a non-zero exit is returned, not thrown.
ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessOptions& opts = {});

// Like runProcess, but throws describeFailure() on a non-zero exit too.
std::string runChecked(const std::vector<std::string>& argv, const ProcessOptions& opts = {});

// One child process driven by an EventLoop. `done` runs once, on the loop,
// after the child exited (or was killed at its deadline: killedAfter is set).
// Destroying the handle while the child runs kills its process group and
// reaps it, and `done` is not called. `done` may destroy the handle.
class ChildProcess {
public:
    using Callback = std::function<void(ProcessResult)>;

    ChildProcess();
    // Starts the child now; throws kovs::Error when it cannot be started.
    ChildProcess(EventLoop& loop, const std::vector<std::string>& argv, const ProcessOptions& opts, Callback done);
    ~ChildProcess();
    ChildProcess(ChildProcess&&) noexcept;
    ChildProcess& operator=(ChildProcess&&) noexcept;
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    bool running() const;
    pid_t pid() const;  // -1 once it has exited (or for an empty handle)
    // For a child started with inputLater: its whole stdin (EOF after it),
    // and from now on the deadline counts. Once only; throws otherwise.
    // `done` replaces the callback given at the start.
    void supplyInput(std::string input, Callback done);

private:
    struct Run;  // what the loop's callbacks point to: stays put when the handle moves
    std::unique_ptr<Run> run_;
};

// Initialises `attr` so that the child starts with no signal blocked and
// SIGPIPE, SIGTERM and SIGINT at their defaults. The agent blocks SIGTERM and
// SIGINT (it reads them through a signalfd) and ignores SIGPIPE; without this
// a daemon it starts inherits all three and `kill <pid>` does nothing to it.
void initSpawnAttrs(posix_spawnattr_t& attr);

}  // namespace kovs
