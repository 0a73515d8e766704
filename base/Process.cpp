#include "base/Process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "base/Error.hpp"
#include "base/EventLoop.hpp"
#include "base/UniqueFd.hpp"

extern char** environ;

namespace kovs {
namespace {

std::string joinArgv(const std::vector<std::string>& argv) {
    std::string s;
    for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
    return s;
}

void setNonBlocking(int fd, const std::string& what) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) throwErrno("O_NONBLOCK on " + what);
}

// Our ends of the child's stdin, stdout and stderr (non-blocking; the
// child's ends stay blocking, as programs expect).
struct ChildPipes {
    UniqueFd in, out, err;
};

struct Spawned {
    pid_t pid = -1;
    UniqueFd pidfd;
    ChildPipes pipes;
};

Spawned spawn(const std::vector<std::string>& argv, const ProcessOptions& opts) {
    if (argv.empty()) throw Error("run process: empty argv");
    const std::string what = argv[0];
    int in[2], out[2], err[2];
    // A socket pair for stdin: a child that exits without reading all of it
    // (an error, an IPAM plugin refusing its input) then makes our send()
    // fail with EPIPE (MSG_NOSIGNAL) instead of raising SIGPIPE, which a
    // pipe's write() would do in any process that has not ignored it.
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0) throwErrno("socketpair for " + what);
    UniqueFd inChild(in[0]), inOurs(in[1]);
    if (::pipe2(out, O_CLOEXEC) < 0) throwErrno("pipe2 for " + what);
    UniqueFd outOurs(out[0]), outChild(out[1]);
    if (::pipe2(err, O_CLOEXEC) < 0) throwErrno("pipe2 for " + what);
    UniqueFd errOurs(err[0]), errChild(err[1]);
    for (int fd : {inOurs.get(), outOurs.get(), errOurs.get()}) setNonBlocking(fd, "pipe of " + what);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, inChild.get(), 0);
    posix_spawn_file_actions_adddup2(&fa, outChild.get(), 1);
    posix_spawn_file_actions_adddup2(&fa, errChild.get(), 2);

    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> envStrings;
    std::vector<char*> envp;
    char** envArg = environ;
    if (opts.env) {
        for (const auto& [k, v] : *opts.env) envStrings.push_back(k + "=" + v);
        for (auto& s : envStrings) envp.push_back(s.data());
        envp.push_back(nullptr);
        envArg = envp.data();
    }

    posix_spawnattr_t attr;
    initSpawnAttrs(attr);
    short flags = 0;
    posix_spawnattr_getflags(&attr, &flags);
    posix_spawnattr_setflags(&attr, static_cast<short>(flags | POSIX_SPAWN_SETPGROUP));
    posix_spawnattr_setpgroup(&attr, 0);  // its own group, so the deadline can kill all of it
    Spawned s;
    int rc = ::posix_spawnp(&s.pid, args[0], &fa, &attr, args.data(), envArg);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw SystemError("exec " + what, rc);
    // glibc 2.36 declares pidfd_open without extern "C": use the syscall.
    s.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, s.pid, 0)));
    if (!s.pidfd) {
        int e = errno;
        ::kill(-s.pid, SIGKILL);
        ::kill(s.pid, SIGKILL);
        ::waitpid(s.pid, nullptr, 0);
        throw SystemError("pidfd_open for " + what + " (pid " + std::to_string(s.pid) + ")", e);
    }
    s.pipes = {std::move(inOurs), std::move(outOurs), std::move(errOurs)};
    return s;
}

}  // namespace

void initSpawnAttrs(posix_spawnattr_t& attr) {
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int s : {SIGPIPE, SIGTERM, SIGINT}) sigaddset(&defaults, s);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

std::string describeFailure(const std::vector<std::string>& argv, const ProcessResult& r) {
    if (r.ok()) return "";
    std::string what = joinArgv(argv) + ": ";
    std::string err = r.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    if (r.killedAfter) {
        what += "killed after " + std::to_string(r.killedAfter->count()) + " ms";
    } else if (r.signal) {
        what += "killed by signal " + std::to_string(r.signal) + " (" + ::strsignal(r.signal) + ")";
    } else {
        what += "exit " + std::to_string(r.exitCode);
    }
    return err.empty() ? what : what + ": " + err;
}

struct ChildProcess::Run {
    EventLoop& loop;
    pid_t pid = -1;
    UniqueFd pidfd;
    ChildPipes pipes;
    std::string input;
    size_t written = 0;
    std::chrono::milliseconds timeout;
    EventLoop::TimerId deadline = 0;
    bool awaitingInput = false;
    ProcessResult result;
    Callback done;

    Run(EventLoop& l, Spawned s, const ProcessOptions& opts, Callback cb)
        : loop(l), pid(s.pid), pidfd(std::move(s.pidfd)), pipes(std::move(s.pipes)),
          input(opts.stdinData.value_or("")), timeout(opts.timeout), awaitingInput(opts.inputLater),
          done(std::move(cb)) {}

    // Everything the loop holds on to is registered here, after `this` has
    // its final address.
    void arm() {
        loop.watch(pidfd.get(), EPOLLIN, [this](uint32_t) { exited(); });
        loop.watch(pipes.out.get(), EPOLLIN, [this](uint32_t) { drain(pipes.out, result.out); });
        loop.watch(pipes.err.get(), EPOLLIN, [this](uint32_t) { drain(pipes.err, result.err); });
        if (!awaitingInput) startInput();
    }

    // The input goes out and the deadline counts from here.
    void startInput() {
        awaitingInput = false;
        if (input.empty()) {
            pipes.in.reset();  // EOF at once
        } else {
            loop.watch(pipes.in.get(), EPOLLOUT, [this](uint32_t) { feed(); });
        }
        deadline = loop.after(timeout, [this] {
            deadline = 0;
            result.killedAfter = timeout;
            killGroup();  // the pidfd reports the exit
        });
    }

    void close(UniqueFd& fd) {
        if (!fd) return;
        loop.unwatch(fd.get());
        fd.reset();
    }

    void feed() {
        while (pipes.in && written < input.size()) {
            ssize_t n = ::send(pipes.in.get(), input.data() + written, input.size() - written, MSG_NOSIGNAL);
            if (n > 0) {
                written += static_cast<size_t>(n);
            } else if (n < 0 && errno == EINTR) {
                continue;
            } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                return;
            } else {
                break;  // EPIPE: the child stopped reading; what it does with that is its business
            }
        }
        close(pipes.in);
    }

    void drain(UniqueFd& fd, std::string& into) {
        char buf[16384];
        while (fd) {
            ssize_t n = ::read(fd.get(), buf, sizeof buf);
            if (n > 0) {
                into.append(buf, static_cast<size_t>(n));
            } else if (n < 0 && errno == EINTR) {
                continue;
            } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                return;
            } else {
                close(fd);
            }
        }
    }

    void killGroup() const {
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);  // in case it left the group
    }

    void stopWatching() {
        if (deadline) loop.cancel(deadline);
        deadline = 0;
        close(pipes.in);
        close(pipes.out);
        close(pipes.err);
        close(pidfd);
    }

    void exited() {
        // What it wrote before exiting is in the pipes; descendants that still
        // hold them are not waited for.
        drain(pipes.out, result.out);
        drain(pipes.err, result.err);
        stopWatching();
        int status = 0;
        pid_t got;
        while ((got = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
        }
        pid = -1;
        if (got < 0) {
            result.err += std::string("(exit status lost: waitpid: ") + std::strerror(errno) + ")";
        } else {
            result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        }
        auto cb = std::move(done);  // `done` may destroy this Run
        if (cb) cb(std::move(result));
    }

    ~Run() {
        if (pid <= 0) return;
        stopWatching();
        killGroup();
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
};

ChildProcess::ChildProcess(EventLoop& loop, const std::vector<std::string>& argv, const ProcessOptions& opts,
                           Callback done)
    : run_(std::make_unique<Run>(loop, spawn(argv, opts), opts, std::move(done))) {
    run_->arm();
}

ChildProcess::ChildProcess() = default;
ChildProcess::~ChildProcess() = default;
ChildProcess::ChildProcess(ChildProcess&&) noexcept = default;
ChildProcess& ChildProcess::operator=(ChildProcess&&) noexcept = default;

void ChildProcess::supplyInput(std::string input, Callback done) {
    if (!running() || !run_->awaitingInput) throw Error("supplyInput: the child is not waiting for its input");
    run_->input = std::move(input);
    run_->done = std::move(done);
    run_->startInput();
}

bool ChildProcess::running() const { return run_ && run_->pid > 0; }
pid_t ChildProcess::pid() const { return running() ? run_->pid : -1; }

ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessOptions& opts) {
    EventLoop loop;
    std::optional<ProcessResult> res;
    ChildProcess child(loop, argv, opts, [&](ProcessResult r) { res = std::move(r); });
    while (!res) loop.runUntil([&] { return res.has_value(); }, std::chrono::hours(1));
    if (res->killedAfter) throw Error(describeFailure(argv, *res));
    return std::move(*res);
}

std::string runChecked(const std::vector<std::string>& argv, const ProcessOptions& opts) {
    auto r = runProcess(argv, opts);
    if (!r.ok()) throw Error(describeFailure(argv, r));
    return r.out;
}

}  // namespace kovs
