#pragma once
// Talks to an OVS daemon's unixctl socket (what ovs-appctl does, without the
// subprocess): <rundir>/<target>.<pid>.ctl, found through <rundir>/<target>.pid.
// All parameters are strings; a reply carries either "result" or "error" text.
// Synchronous, on a private event loop: calls to vswitchd take microseconds
// and the callers (tunnel programming) want the answer before going on.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/EventLoop.hpp"
#include "ovs/JsonRpcConnection.hpp"

namespace kovs {

struct UnixctlCommand {
    std::string command;
    std::vector<std::string> args;
    std::string describe() const;  // "ovs/route/add 10.0.0.9/32 br-phy"
};

struct UnixctlReply {
    bool ok = false;
    std::string text;  // the result, or the error text (trailing newline removed)
};

class UnixctlClient {
public:
    // $OVS_RUNDIR, else /var/run/openvswitch.
    static std::string defaultRundir();

    explicit UnixctlClient(std::string rundir = defaultRundir(), std::string target = "ovs-vswitchd",
                           std::chrono::milliseconds timeout = std::chrono::seconds(5));
    ~UnixctlClient();
    UnixctlClient(const UnixctlClient&) = delete;
    UnixctlClient& operator=(const UnixctlClient&) = delete;

    // Returns the result text; throws kovs::Error("<command> <args>: <error text>").
    std::string call(const std::string& command, const std::vector<std::string>& args = {});
    // Sends every command on one connection before reading any reply; replies
    // come back in order. Throws only when the daemon cannot be reached at all.
    std::vector<UnixctlReply> pipeline(const std::vector<UnixctlCommand>& commands);

    // Pid of the daemon we are (or were last) connected to; -1 before that.
    pid_t pid() const { return pid_; }
    // Reads the pidfile: true when the daemon was restarted since we connected.
    bool targetRestarted() const;
    // Called when a (re)connection reaches a different pid than the previous
    // one, so the caller can re-program state that lived in the old process.
    void setRestartHandler(std::function<void(pid_t oldPid, pid_t newPid)> h) { onRestart_ = std::move(h); }

    std::string pidfilePath() const { return rundir_ + "/" + target_ + ".pid"; }

private:
    pid_t readPidfile() const;
    void ensureConnected();

    std::string rundir_;
    std::string target_;
    std::chrono::milliseconds timeout_;
    EventLoop loop_;
    std::unique_ptr<JsonRpcConnection> conn_;
    pid_t pid_ = -1;
    std::function<void(pid_t, pid_t)> onRestart_;
};

}  // namespace kovs
