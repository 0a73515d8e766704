#pragma once
// Runs ovsdb-server and ovs-vswitchd (userspace datapath) for the agent when
// ovs.manage is on: creates the database from the schema if missing, clears
// stale pid/ctl files left by a crash, restarts a daemon that dies (with
// backoff) and tells the caller, who re-applies the state that lived only in
// the dead process (bridges are in the db; ovs/route and tnl/neigh are not).
//
// Daemons found already running (pidfile names a live process of the right
// name, e.g. after an agent restart) are adopted, not restarted: an agent
// restart must not disturb traffic. Exits are seen through pidfds, so adopted
// daemons are watched just like our own children.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/EventLoop.hpp"
#include "base/RetryTimer.hpp"
#include "base/Job.hpp"
#include "base/UniqueFd.hpp"

namespace kovs::daemons {

struct OvsSupervisorOptions {
    std::string rundir = "/var/run/openvswitch";  // sockets, pidfiles, ctl files
    std::string dbPath = "/etc/openvswitch/conf.db";
    std::string schemaPath = "/usr/share/openvswitch/vswitch.ovsschema";
    std::string logDir;  // empty: rundir
    std::chrono::milliseconds backoffMin{100};
    std::chrono::milliseconds backoffMax{5000};
    // A daemon that stayed up this long gets its backoff reset.
    std::chrono::milliseconds stableAfter{10000};
    // Leave started daemons running when the supervisor is destroyed, so an
    // agent exit (SIGTERM, upgrade) does not take the datapath down with it.
    bool keepRunningOnExit = false;
};

class OvsSupervisor : public Job {
public:
    enum class Daemon { OvsdbServer, Vswitchd };
    using RestartHandler = std::function<void(Daemon, pid_t newPid)>;

    OvsSupervisor(EventLoop& loop, OvsSupervisorOptions opts);
    // Stops the daemons this object started (not adopted ones), unless
    // keepRunningOnExit.
    ~OvsSupervisor() override;
    OvsSupervisor(const OvsSupervisor&) = delete;
    OvsSupervisor& operator=(const OvsSupervisor&) = delete;

    // Starts (or adopts) both daemons. Throws kovs::Error naming the step.
    void start();
    // SIGTERM to both (also adopted ones), waits for them to exit.
    void stop();

    void setRestartHandler(RestartHandler h) { onRestart_ = std::move(h); }
    pid_t pid(Daemon d) const;
    unsigned restarts(Daemon d) const;
    std::string dbRemote() const { return "unix:" + opts_.rundir + "/db.sock"; }
    const OvsSupervisorOptions& options() const { return opts_; }

    // Section "vswitchd" (pid, restarts) and "ovsdbServer".
    std::string name() const override { return "ovs"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;

private:
    struct Proc {
        Daemon which;
        std::string name;  // binary and pidfile name
        pid_t pid = -1;
        bool child = false;
        UniqueFd pidfd;
        std::chrono::steady_clock::time_point startedAt;
        std::optional<RetryTimer> restart;  // backoffMin doubling to backoffMax; reset once stable
        unsigned restarts = 0;
    };

    std::vector<std::string> argv(const Proc& p) const;
    bool adopt(Proc& p);
    void cleanStale(const Proc& p);
    void waitForDbSocket();
    void spawn(Proc& p);
    void watch(Proc& p);
    void onExit(Proc& p);
    void restartNow(Proc& p);
    void terminate(Proc& p);
    Proc& proc(Daemon d);

    EventLoop& loop_;
    OvsSupervisorOptions opts_;
    Proc db_{Daemon::OvsdbServer, "ovsdb-server"};
    Proc vs_{Daemon::Vswitchd, "ovs-vswitchd"};
    bool running_ = false;
    RestartHandler onRestart_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

const char* toString(OvsSupervisor::Daemon d);

}  // namespace kovs::daemons
