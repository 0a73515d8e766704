#include "daemons/OvsSupervisor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/Error.hpp"
#include "base/Log.hpp"
#include "base/Pidfile.hpp"
#include "base/Process.hpp"

extern char** environ;

namespace kovs::daemons {
namespace fs = std::filesystem;

namespace {

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

bool accepts(const std::string& socketPath) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (socketPath.size() >= sizeof a.sun_path) return false;
    socketPath.copy(a.sun_path, sizeof a.sun_path - 1);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    return fd && ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
}

}  // namespace

const char* toString(OvsSupervisor::Daemon d) {
    return d == OvsSupervisor::Daemon::OvsdbServer ? "ovsdb-server" : "ovs-vswitchd";
}

OvsSupervisor::OvsSupervisor(EventLoop& loop, OvsSupervisorOptions opts) : loop_(loop), opts_(std::move(opts)) {
    if (opts_.logDir.empty()) opts_.logDir = opts_.rundir;
    for (Proc* p : {&db_, &vs_}) {
        Daemon which = p->which;
        p->restart.emplace(loop_, opts_.backoffMin, opts_.backoffMax, [this, which] { restartNow(proc(which)); });
    }
}

OvsSupervisor::~OvsSupervisor() {
    *alive_ = false;
    for (Proc* p : {&vs_, &db_}) {
        p->restart->cancel();
        if (p->pidfd) loop_.unwatch(p->pidfd.get());
        if (p->child && !opts_.keepRunningOnExit) terminate(*p);
    }
}

OvsSupervisor::Proc& OvsSupervisor::proc(Daemon d) { return d == Daemon::OvsdbServer ? db_ : vs_; }
pid_t OvsSupervisor::pid(Daemon d) const { return d == Daemon::OvsdbServer ? db_.pid : vs_.pid; }
unsigned OvsSupervisor::restarts(Daemon d) const { return d == Daemon::OvsdbServer ? db_.restarts : vs_.restarts; }

std::vector<std::string> OvsSupervisor::argv(const Proc& p) const {
    const auto& r = opts_.rundir;
    if (p.which == Daemon::OvsdbServer) {
        return {"ovsdb-server", opts_.dbPath, "--remote=punix:" + r + "/db.sock", "--pidfile=" + r + "/ovsdb-server.pid",
                "--log-file=" + opts_.logDir + "/ovsdb-server.log"};
    }
    return {"ovs-vswitchd", dbRemote(), "--pidfile=" + r + "/ovs-vswitchd.pid",
            "--log-file=" + opts_.logDir + "/ovs-vswitchd.log"};
}

void OvsSupervisor::start() {
    if (running_) return;
    std::error_code ec;
    fs::create_directories(opts_.rundir, ec);
    if (ec) throw Error("ovs supervisor: create rundir " + opts_.rundir + ": " + ec.message());
    fs::create_directories(opts_.logDir, ec);
    if (!fs::exists(opts_.dbPath)) {
        fs::create_directories(fs::path(opts_.dbPath).parent_path(), ec);
        runChecked({"ovsdb-tool", "create", opts_.dbPath, opts_.schemaPath});
        spdlog::info("ovs supervisor: created {} from {}", opts_.dbPath, opts_.schemaPath);
    }
    running_ = true;
    for (Proc* p : {&db_, &vs_}) {
        if (adopt(*p)) continue;
        cleanStale(*p);
        if (p == &vs_) waitForDbSocket();
        spawn(*p);
    }
}

// ovs-vswitchd that finds no db.sock retries only after a second (its
// reconnect back-off), and that second is the datapath's whole start: every
// pod of a node restarted with its kovs pod waits for it.
void OvsSupervisor::waitForDbSocket() {
    auto path = opts_.rundir + "/db.sock";
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!accepts(path) && alive(db_.pid) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

bool OvsSupervisor::adopt(Proc& p) {
    // Pids are reused: only a live process with the daemon's name counts.
    auto pid = Pidfile(opts_.rundir + "/" + p.name + ".pid").readLive(p.name);
    if (!pid || !alive(*pid)) return false;
    p.pid = *pid;
    p.child = false;
    p.startedAt = std::chrono::steady_clock::now();
    watch(p);
    spdlog::info("ovs supervisor: adopted running {} (pid {})", p.name, p.pid);
    return true;
}

void OvsSupervisor::cleanStale(const Proc& p) {
    const auto& r = opts_.rundir;
    std::error_code ec;
    fs::remove(r + "/" + p.name + ".pid", ec);
    for (const auto& e : fs::directory_iterator(r, ec)) {
        auto name = e.path().filename().string();
        // <name>.<pid>.ctl of a dead process: unixctl clients would connect to it and fail.
        if (name.rfind(p.name + ".", 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == ".ctl") {
            auto mid = name.substr(p.name.size() + 1, name.size() - p.name.size() - 5);
            pid_t old = static_cast<pid_t>(std::atol(mid.c_str()));
            if (!alive(old)) fs::remove(e.path(), ec);
        }
    }
    // Left alone on purpose: db.sock (ovsdb-server replaces it once it holds
    // the database) and the database's ".conf.db.~lock~". That lock is an
    // fcntl lock, gone with a dead holder; while the file stays, a server we
    // did not see start (no pidfile yet) keeps ours from opening conf.db too.
}

void OvsSupervisor::spawn(Proc& p) {
    auto args = argv(p);
    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    // The daemons put their unixctl sockets in OVS_RUNDIR: that is where
    // UnixctlClient looks for <name>.<pid>.ctl.
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        if (kv.rfind("OVS_RUNDIR=", 0) != 0 && kv.rfind("OVS_LOGDIR=", 0) != 0) env.push_back(kv);
    }
    env.push_back("OVS_RUNDIR=" + opts_.rundir);
    env.push_back("OVS_LOGDIR=" + opts_.logDir);
    std::vector<char*> cenv;
    for (auto& kv : env) cenv.push_back(kv.data());
    cenv.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    std::string console = opts_.logDir + "/" + p.name + ".console";
    posix_spawn_file_actions_addopen(&fa, 1, console.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_t attr;
    initSpawnAttrs(attr);
    // Own process group: a Ctrl-C aimed at the agent does not hit the datapath.
    short flags = 0;
    posix_spawnattr_getflags(&attr, &flags);
    posix_spawnattr_setflags(&attr, static_cast<short>(flags | POSIX_SPAWN_SETPGROUP));
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, cargs[0], &fa, &attr, cargs.data(), cenv.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw SystemError("ovs supervisor: exec " + p.name, rc);
    p.pid = pid;
    p.child = true;
    p.startedAt = std::chrono::steady_clock::now();
    try {
        watch(p);
    } catch (const Error&) {
        // Unwatched, its exit would go unnoticed: better not to have it.
        terminate(p);
        throw;
    }
    spdlog::info("ovs supervisor: started {} (pid {})", p.name, pid);
}

void OvsSupervisor::watch(Proc& p) {
    // glibc 2.36 declares pidfd_open without extern "C": use the syscall.
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, p.pid, 0));
    if (fd < 0) throwErrno("ovs supervisor: pidfd_open " + p.name + " pid " + std::to_string(p.pid));
    p.pidfd.reset(fd);
    auto token = alive_;
    Daemon which = p.which;
    loop_.watch(fd, EPOLLIN, [this, token, which](uint32_t) {
        if (*token) onExit(proc(which));
    });
}

void OvsSupervisor::onExit(Proc& p) {
    loop_.unwatch(p.pidfd.get());
    p.pidfd.reset();
    int status = 0;
    std::string how = "exited";
    if (p.child && ::waitpid(p.pid, &status, 0) == p.pid) {
        how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                  : "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    p.pid = -1;
    if (!running_) return;
    if (std::chrono::steady_clock::now() - p.startedAt > opts_.stableAfter) p.restart->succeeded();
    spdlog::warn("ovs supervisor: {} {}; restarting in {} ms", p.name, how, p.restart->nextDelay().count());
    p.restart->schedule();
}

void OvsSupervisor::restartNow(Proc& p) {
    if (!running_) return;
    try {
        cleanStale(p);
        spawn(p);
    } catch (const Error& e) {
        // Out of pids or memory, say: try again later rather than never.
        spdlog::error("{}; retrying in {} ms", e.what(), p.restart->nextDelay().count());
        p.restart->schedule();
        return;
    }
    ++p.restarts;
    if (onRestart_) onRestart_(p.which, p.pid);
}

void OvsSupervisor::terminate(Proc& p) {
    if (p.pid <= 0) return;
    ::kill(p.pid, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (alive(p.pid) && std::chrono::steady_clock::now() < deadline) {
        // Reap it if it is ours, also when it was adopted from an earlier
        // supervisor of this process (a zombie still answers kill(pid, 0)).
        if (::waitpid(p.pid, nullptr, WNOHANG) == p.pid) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (alive(p.pid)) {
        ::kill(p.pid, SIGKILL);
        ::waitpid(p.pid, nullptr, 0);
    }
    p.pid = -1;
}

void OvsSupervisor::stop() {
    running_ = false;
    for (Proc* p : {&vs_, &db_}) {
        p->restart->cancel();
        if (p->pidfd) {
            loop_.unwatch(p->pidfd.get());
            p->pidfd.reset();
        }
        terminate(*p);
    }
}

void OvsSupervisor::status(nlohmann::json& out) const {
    out["vswitchd"] = {{"pid", pid(Daemon::Vswitchd)}, {"restarts", restarts(Daemon::Vswitchd)}};
    out["ovsdbServer"] = {{"pid", pid(Daemon::OvsdbServer)}, {"restarts", restarts(Daemon::OvsdbServer)}};
}

void OvsSupervisor::metrics(MetricsText& m) const {
    for (auto d : {Daemon::Vswitchd, Daemon::OvsdbServer})
        m.counter("kovs_ovs_restarts_total", "OVS daemons restarted by the agent.", static_cast<double>(restarts(d)),
                  {{"daemon", toString(d)}});
}

}  // namespace kovs::daemons
