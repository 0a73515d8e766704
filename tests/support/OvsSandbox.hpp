#pragma once
// A private ovsdb-server + ovs-vswitchd (userspace datapath) in a temporary
// directory, for integration tests. The test binary already runs in its own
// network namespace (PrivateNetnsMain.cpp). The destructor stops both daemons
// and removes the directory, also when the test failed.
#include <sys/types.h>

#include <string>
#include <vector>

namespace kovs::test {

class OvsSandbox {
public:
    // startVswitchd=false gives a database only (for OVSDB-only tests).
    explicit OvsSandbox(bool startVswitchd = true);
    ~OvsSandbox();
    OvsSandbox(const OvsSandbox&) = delete;
    OvsSandbox& operator=(const OvsSandbox&) = delete;

    const std::string& dir() const { return dir_; }     // also OVS_RUNDIR/DBDIR/LOGDIR
    std::string dbSocket() const { return dir_ + "/db.sock"; }
    std::string dbRemote() const { return "unix:" + dbSocket(); }
    std::string vswitchdPidfile() const { return dir_ + "/ovs-vswitchd.pid"; }
    std::string schemaPath() const;

    void startOvsdb();
    void stopOvsdb();          // SIGTERM, waits for exit
    void startVswitchd();
    void killVswitchd(int sig = 9);  // waits for exit
    pid_t vswitchdPid() const;

    // ovs-vsctl / ovs-appctl / ovs-ofctl against this sandbox; throw on failure.
    std::string vsctl(const std::vector<std::string>& args) const;
    std::string appctl(const std::vector<std::string>& args) const;
    std::string ofctl(const std::vector<std::string>& args) const;

    // Environment for OVS tools and for the agent under test.
    std::vector<std::string> envArgs() const;

private:
    std::string dir_;
    pid_t ovsdbPid_ = -1;
};

}  // namespace kovs::test
