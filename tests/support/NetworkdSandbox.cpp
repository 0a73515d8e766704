#include "tests/support/NetworkdSandbox.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/Error.hpp"
#include "tests/support/Poll.hpp"

extern char** environ;

namespace kovs::test {
namespace {

// Runs inside `unshare --mount --propagation private`: only ever mounts over
// paths of that new mount namespace. No input is interpolated.
const char* kSetupScript = R"SH(set -e
mount -t tmpfs -o mode=0755 tmpfs /run/systemd
mount -t tmpfs -o mode=0755 tmpfs /run/dbus
mkdir -p /etc/systemd/network
mount -t tmpfs -o mode=0755 tmpfs /etc/systemd/network
echo docker > /run/systemd/container
mkdir -p /run/systemd/netif/links /run/systemd/netif/leases /run/systemd/netif/lldp /run/systemd/network
chown -R systemd-network:systemd-network /run/systemd/netif
printf '[Match]\nName=*\n' > /etc/systemd/network/99-kovs-test-catchall.network
mount -t sysfs -o ro sysfs /sys
touch /run/systemd/kovs-sandbox-ready
# Watchdog for a test binary that crashes before its destructors run: once
# the parent is gone, kill every process of this private mount namespace
# (networkd, dbus-daemon: nothing else ever enters it). The daemons drop
# privileges, which clears any parent-death signal, hence this loop.
set +e
parent=$PPID
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
me=$(readlink /proc/$$/ns/mnt)
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [ "$pid" != "$$" ] && [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$me" ] && kill -9 "$pid" 2>/dev/null
done
exit 0
)SH";

std::string nsInode(const std::string& path) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) throwErrno("stat " + path);
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& logPath) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw SystemError("spawn " + argv[0], rc);
    return pid;
}

void terminate(pid_t& pid, int sig) {
    if (pid <= 0) return;
    ::kill(pid, sig);
    int status;
    // A daemon that ignores SIGTERM for 5 s gets SIGKILL.
    bool exited = pollUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, std::chrono::seconds(5));
    if (!exited) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
    }
    pid = -1;
}

}  // namespace

NetworkdSandbox::NetworkdSandbox() {
    // PID 1 may be unreadable (it is on CI machines); the process that started
    // the test binary (meson, a shell) is in the machine's namespaces, and the
    // test binary left them in main() (PrivateNetnsMain.cpp).
    std::string parent = "/proc/" + std::to_string(::getppid());
    if (nsInode("/proc/self/ns/net") == nsInode(parent + "/ns/net"))
        throw Error("networkd sandbox: refusing to start in the network namespace of the parent process");
    if (nsInode("/proc/self/ns/mnt") == nsInode(parent + "/ns/mnt"))
        throw Error("networkd sandbox: refusing to start in the mount namespace of the parent process");
    char tmpl[] = "/tmp/kovs-networkd-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throwErrno("networkd sandbox: mkdtemp");
    workDir_ = tmpl;
    logPath_ = workDir_ + "/daemons.log";
    try {
        holder_ = spawn({"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", kSetupScript}, logPath_);
        std::string ready = "/proc/" + std::to_string(holder_) + "/root/run/systemd/kovs-sandbox-ready";
        int status;
        if (!pollUntil([&] { return std::filesystem::exists(ready) || ::waitpid(holder_, &status, WNOHANG) == holder_; },
                       std::chrono::seconds(10)) ||
            !std::filesystem::exists(ready))
            throw Error("networkd sandbox: mount namespace setup failed: " + logTail());
        if (nsInode("/proc/" + std::to_string(holder_) + "/ns/net") != nsInode("/proc/self/ns/net"))
            throw Error("networkd sandbox: holder is not in the test's network namespace");
        dbus_ = spawn(inSandbox({"dbus-daemon", "--system", "--nofork", "--nopidfile"}), logPath_);
        std::string sock = "/proc/" + std::to_string(holder_) + "/root/run/dbus/system_bus_socket";
        if (!pollUntil([&] { return std::filesystem::exists(sock); }, std::chrono::seconds(10)))
            throw Error("networkd sandbox: dbus-daemon did not start: " + logTail());
        startNetworkd();
    } catch (...) {
        terminate(networkd_, SIGTERM);
        terminate(dbus_, SIGTERM);
        terminate(holder_, SIGKILL);
        std::filesystem::remove_all(workDir_);
        throw;
    }
}

NetworkdSandbox::~NetworkdSandbox() {
    terminate(networkd_, SIGTERM);
    terminate(dbus_, SIGTERM);
    // The last process of the mount namespace: its tmpfs/sysfs mounts go with it.
    terminate(holder_, SIGKILL);
    std::error_code ec;
    std::filesystem::remove_all(workDir_, ec);
}

std::vector<std::string> NetworkdSandbox::inSandbox(const std::vector<std::string>& argv) const {
    std::vector<std::string> v{"nsenter", "--target", std::to_string(holder_), "--mount", "--"};
    v.insert(v.end(), argv.begin(), argv.end());
    return v;
}

void NetworkdSandbox::startNetworkd() {
    if (networkd_ > 0) return;
    networkd_ = spawn(inSandbox({"/lib/systemd/systemd-networkd"}), logPath_);
    bool up = pollUntil([&] {
        int status;
        if (::waitpid(networkd_, &status, WNOHANG) == networkd_) {
            networkd_ = -1;
            return true;
        }
        return runProcess(inSandbox({"networkctl", "list", "--no-legend"})).ok();
    }, std::chrono::seconds(15), std::chrono::milliseconds(50));
    if (!up || networkd_ < 0) throw Error("networkd sandbox: systemd-networkd did not come up: " + logTail());
}

void NetworkdSandbox::stopNetworkd() { terminate(networkd_, SIGTERM); }

std::string NetworkdSandbox::networkctl(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"networkctl"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runChecked(inSandbox(argv));
}

std::string NetworkdSandbox::setupState(const std::string& link) const {
    auto r = runProcess(inSandbox({"networkctl", "list", "--no-legend", "--no-pager"}));
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string idx, name, type, oper, setup;
        f >> idx >> name >> type >> oper >> setup;
        if (name == link) return setup;
    }
    return "";
}

std::string NetworkdSandbox::runtimeNetworkDir() const {
    return "/proc/" + std::to_string(holder_) + "/root/run/systemd/network";
}

std::string NetworkdSandbox::configNetworkDir() const {
    return "/proc/" + std::to_string(holder_) + "/root/etc/systemd/network";
}

std::string NetworkdSandbox::logTail(size_t bytes) const {
    std::ifstream in(logPath_);
    std::stringstream s;
    s << in.rdbuf();
    std::string all = s.str();
    return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace kovs::test
