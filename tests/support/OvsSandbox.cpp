#include "tests/support/OvsSandbox.hpp"

#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/Poll.hpp"

extern char** environ;

namespace kovs::test {
namespace {

pid_t readPid(const std::string& path) {
    std::ifstream f(path);
    pid_t pid = -1;
    if (f >> pid) return pid;
    return -1;
}

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

void stopPid(pid_t pid, int sig) {
    if (!alive(pid)) return;
    ::kill(pid, sig);
    // The daemons are detached (not our children): wait for them to vanish.
    if (!pollUntil([&] { return !alive(pid); }, std::chrono::seconds(10))) ::kill(pid, SIGKILL);
    pollUntil([&] { return !alive(pid); }, std::chrono::seconds(5));
}

}  // namespace

OvsSandbox::OvsSandbox(bool startVswitchd) {
    char tmpl[] = "/tmp/kovs-ovs-XXXXXX";
    if (!::mkdtemp(tmpl)) throwErrno("mkdtemp");
    dir_ = tmpl;
    // Watchdog for a test binary that dies before its destructors run (a
    // crash, a sanitizer abort, a timeout's SIGKILL): the daemons are detached
    // and would outlive it. Once this process is gone and the directory still
    // exists, it kills every daemon with a pidfile there and removes it; the
    // destructor removing the directory ends it. Backgrounded with its stdio
    // on /dev/null, so runChecked returns at once and init adopts it.
    std::string watchdog = "(while kill -0 " + std::to_string(::getpid()) + " 2>/dev/null && [ -d '" + dir_ +
                           "' ]; do sleep 1; done; [ -d '" + dir_ + "' ] || exit 0; for f in '" + dir_ +
                           "'/*.pid; do kill -9 \"$(cat \"$f\")\" 2>/dev/null; done; rm -rf '" + dir_ +
                           "') </dev/null >/dev/null 2>&1 &";
    try {
        runChecked({"sh", "-c", watchdog});
        runChecked({"ovsdb-tool", "create", dir_ + "/conf.db", schemaPath()});
        startOvsdb();
        vsctl({"--no-wait", "init"});
        if (startVswitchd) this->startVswitchd();
    } catch (...) {
        this->~OvsSandbox();
        throw;
    }
}

OvsSandbox::~OvsSandbox() {
    stopPid(readPid(vswitchdPidfile()), SIGTERM);
    stopOvsdb();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

std::string OvsSandbox::schemaPath() const { return "/usr/share/openvswitch/vswitch.ovsschema"; }

std::vector<std::string> OvsSandbox::envArgs() const {
    return {"OVS_RUNDIR=" + dir_, "OVS_DBDIR=" + dir_, "OVS_LOGDIR=" + dir_, "OVS_SYSCONFDIR=" + dir_};
}

static ProcessOptions sandboxEnv(const OvsSandbox& s) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        auto eq = kv.find('=');
        if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& kv : s.envArgs()) {
        auto eq = kv.find('=');
        env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    ProcessOptions o;
    o.env = std::move(env);
    return o;
}

void OvsSandbox::startOvsdb() {
    runChecked({"ovsdb-server", dir_ + "/conf.db", "--remote=punix:" + dbSocket(),
                "--pidfile=" + dir_ + "/ovsdb-server.pid", "--unixctl=" + dir_ + "/ovsdb-server.ctl",
                "--log-file=" + dir_ + "/ovsdb-server.log", "--detach"},
               sandboxEnv(*this));
    ovsdbPid_ = readPid(dir_ + "/ovsdb-server.pid");
}

void OvsSandbox::stopOvsdb() {
    stopPid(ovsdbPid_, SIGTERM);
    ovsdbPid_ = -1;
}

void OvsSandbox::startVswitchd() {
    runChecked({"ovs-vswitchd", dbRemote(), "--pidfile=" + vswitchdPidfile(),
                "--log-file=" + dir_ + "/ovs-vswitchd.log", "--detach"},
               sandboxEnv(*this));
}

pid_t OvsSandbox::vswitchdPid() const { return readPid(vswitchdPidfile()); }

void OvsSandbox::killVswitchd(int sig) { stopPid(vswitchdPid(), sig); }

std::string OvsSandbox::vsctl(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"ovs-vsctl", "--db=" + dbRemote(), "--timeout=10"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runChecked(argv, sandboxEnv(*this));
}

std::string OvsSandbox::appctl(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"ovs-appctl", "--timeout=10", "-t", "ovs-vswitchd"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runChecked(argv, sandboxEnv(*this));
}

std::string OvsSandbox::ofctl(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"ovs-ofctl"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runChecked(argv, sandboxEnv(*this));
}

}  // namespace kovs::test
