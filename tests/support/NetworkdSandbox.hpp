#pragma once
// A real systemd-networkd (and the dbus-daemon --system that networkctl needs)
// running in the test's private network namespace, inside a mount namespace
// of their own. That mount namespace has its own /etc/systemd/network (one
// catch-all `[Match] Name=*` file, no addresses), tmpfs on /run/systemd and
// /run/dbus, /run/systemd/container = docker, netif/{links,leases,lldp}
// owned by systemd-network and a read-only sysfs of this netns (so networkd
// does not wait for udev). A holder process keeps the namespace alive; the
// daemons and every networkctl call enter it with nsenter. The test process's
// own mounts are never changed: when the holder and daemons are killed
// (destructor, also on failure) the namespace and its mounts are gone. If the
// test binary crashes instead, the holder notices within a second and kills
// the daemons of its namespace itself.
//
// Refuses to start unless the test runs in a network and mount namespace
// other than its parent process's, so networkd can never see the machine's interfaces.
#include <sys/types.h>

#include <string>
#include <vector>

#include "base/Process.hpp"

namespace kovs::test {

class NetworkdSandbox {
public:
    NetworkdSandbox();
    ~NetworkdSandbox();
    NetworkdSandbox(const NetworkdSandbox&) = delete;
    NetworkdSandbox& operator=(const NetworkdSandbox&) = delete;

    // Starts networkd and waits until networkctl answers.
    void startNetworkd();
    // SIGTERM, waits for exit.
    void stopNetworkd();
    void restartNetworkd() {
        stopNetworkd();
        startNetworkd();
    }

    // `networkctl <args>` inside the sandbox; throws on failure.
    std::string networkctl(const std::vector<std::string>& args) const;
    // SETUP column of `networkctl list` for a link ("configured", "unmanaged"...), "" if not listed.
    std::string setupState(const std::string& link) const;

    // Paths as seen from the test process, pointing into the sandbox's mounts.
    std::string runtimeNetworkDir() const;   // the sandbox's /run/systemd/network
    std::string configNetworkDir() const;    // the sandbox's /etc/systemd/network
    const std::string& logPath() const { return logPath_; }
    std::string logTail(size_t bytes = 4000) const;

private:
    std::vector<std::string> inSandbox(const std::vector<std::string>& argv) const;

    std::string workDir_;
    std::string logPath_;
    pid_t holder_ = -1;
    pid_t dbus_ = -1;
    pid_t networkd_ = -1;
};

}  // namespace kovs::test
