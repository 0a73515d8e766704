#include "base/Process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "base/Error.hpp"
#include "base/UniqueFd.hpp"

extern char** environ;

namespace kovs {
namespace {

struct Pipe {
    UniqueFd r, w;
    // A socket pair for the child's stdin: a child that exits without reading
    // all of it (an error, an IPAM plugin refusing its input) then makes our
    // send() fail with EPIPE (MSG_NOSIGNAL) instead of killing us with
    // SIGPIPE, which a pipe's write() would do in any process that has not
    // ignored it (kovs-cni, the tests).
    explicit Pipe(bool socket = false) {
        int fds[2];
        if (socket ? ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0 : ::pipe2(fds, O_CLOEXEC) < 0)
            throwErrno(socket ? "socketpair" : "pipe2");
        r.reset(fds[0]);
        w.reset(fds[1]);
    }
};

std::string joinArgv(const std::vector<std::string>& argv) {
    std::string s;
    for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
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

ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessOptions& opts) {
    if (argv.empty()) throw Error("runProcess: empty argv");
    Pipe in(true), out, err;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in.r.get(), 0);
    posix_spawn_file_actions_adddup2(&fa, out.w.get(), 1);
    posix_spawn_file_actions_adddup2(&fa, err.w.get(), 2);

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
    pid_t pid;
    int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), envArg);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw SystemError("exec " + argv[0], rc);
    in.r.reset();
    out.w.reset();
    err.w.reset();

    // Feed stdin and drain both pipes together so a chatty child never blocks.
    std::string input = opts.stdinData.value_or("");
    size_t written = 0;
    if (input.empty()) in.w.reset();
    ProcessResult res;
    while (out.r || err.r || in.w) {
        std::vector<pollfd> pfds;
        if (in.w) pfds.push_back({in.w.get(), POLLOUT, 0});
        if (out.r) pfds.push_back({out.r.get(), POLLIN, 0});
        if (err.r) pfds.push_back({err.r.get(), POLLIN, 0});
        if (::poll(pfds.data(), pfds.size(), -1) < 0) {
            if (errno == EINTR) continue;
            throwErrno("poll " + argv[0]);
        }
        for (auto& p : pfds) {
            if (!p.revents) continue;
            if (in.w && p.fd == in.w.get()) {
                ssize_t n = ::send(p.fd, input.data() + written, input.size() - written, MSG_NOSIGNAL);
                if (n > 0) written += static_cast<size_t>(n);
                if (n < 0 || written == input.size()) in.w.reset();
                continue;
            }
            char buf[8192];
            ssize_t n = ::read(p.fd, buf, sizeof buf);
            bool isOut = out.r && p.fd == out.r.get();
            if (n <= 0) {
                (isOut ? out.r : err.r).reset();
            } else {
                (isOut ? res.out : res.err).append(buf, static_cast<size_t>(n));
            }
        }
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) throwErrno("waitpid " + argv[0]);
    }
    res.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return res;
}

std::string runChecked(const std::vector<std::string>& argv, const ProcessOptions& opts) {
    auto r = runProcess(argv, opts);
    if (!r.ok()) {
        throw Error(joinArgv(argv) + ": exit " + std::to_string(r.exitCode) + ": " + r.err);
    }
    return r.out;
}

}  // namespace kovs
