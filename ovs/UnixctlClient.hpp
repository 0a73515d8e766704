#pragma once
// Talks to an OVS daemon's unixctl socket (what ovs-appctl does, without the
// subprocess): <rundir>/<target>.<pid>.ctl, found through <rundir>/<target>.pid.
// All parameters are strings; a reply carries either "result" or "error" text.
//
// Asynchronous, on the caller's EventLoop: one JSON-RPC connection, re-opened
// when the pidfile names another pid (the daemon restarted) or the old one
// closed; every request has a timeout. A stopped or hung vswitchd therefore
// costs the caller a late callback, never a blocked loop.
// BlockingUnixctlClient is the synchronous form for short-lived CLIs and
// tests, on a private loop of its own.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/EventLoop.hpp"
#include "base/Pidfile.hpp"
#include "ovs/JsonRpcConnection.hpp"

namespace kovs::ovs {

struct UnixctlCommand {
    std::string command;
    std::vector<std::string> args;
    std::string describe() const;  // "ovs/route/add 10.0.0.9/32 br-phy"
    bool operator==(const UnixctlCommand&) const = default;
};

struct UnixctlReply {
    bool ok = false;
    std::string text;  // the result, or the error text (trailing newline removed)
    bool operator==(const UnixctlReply&) const = default;
};

struct UnixctlReplies {
    pid_t pid = -1;  // the daemon that was asked
    // Set when no daemon could be asked at all (no pidfile, connect refused);
    // every reply then carries this text.
    std::string unreachable;
    std::vector<UnixctlReply> replies;  // one per command, in order
    bool allOk() const;
};

class UnixctlClient {
public:
    using Callback = std::function<void(UnixctlReplies)>;

    // $OVS_RUNDIR, else /var/run/openvswitch.
    static std::string defaultRundir();

    UnixctlClient(EventLoop& loop, std::string rundir = defaultRundir(), std::string target = "ovs-vswitchd",
                  std::chrono::milliseconds timeout = std::chrono::seconds(5));
    ~UnixctlClient();
    UnixctlClient(const UnixctlClient&) = delete;
    UnixctlClient& operator=(const UnixctlClient&) = delete;

    // Sends every command on one connection before reading any reply (the
    // daemon answers in order). `done` runs once, on the loop and never from
    // inside this call, with one reply per command: the result, the daemon's
    // error text, "timed out", or why the connection closed. It does not run
    // once this client is destroyed; a caller that may go first guards its
    // own state.
    void pipeline(std::vector<UnixctlCommand> commands, Callback done);

    // Pid of the daemon the current connection talks to; -1 before the first.
    pid_t pid() const { return pid_; }
    const std::string& pidfilePath() const { return pidfile_.path(); }
    std::chrono::milliseconds timeout() const { return timeout_; }

private:
    void ensureConnected();  // throws kovs::Error naming what is missing

    EventLoop& loop_;
    std::string rundir_;
    std::string target_;
    Pidfile pidfile_;
    std::chrono::milliseconds timeout_;
    std::shared_ptr<JsonRpcConnection> conn_;
    pid_t pid_ = -1;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// For kovsctl and tests: each call runs a private loop until its replies are
// in (at most the timeout), so it never runs anyone else's callbacks.
class BlockingUnixctlClient {
public:
    explicit BlockingUnixctlClient(std::string rundir = UnixctlClient::defaultRundir(),
                                   std::string target = "ovs-vswitchd",
                                   std::chrono::milliseconds timeout = std::chrono::seconds(5));

    // Returns the result text; throws kovs::Error("<command> <args>: <error
    // text>"), or the reason alone when the daemon could not be asked.
    std::string call(const std::string& command, const std::vector<std::string>& args = {});
    UnixctlReplies pipeline(std::vector<UnixctlCommand> commands);
    pid_t pid() const { return client_.pid(); }

private:
    EventLoop loop_;
    UnixctlClient client_;
};

}  // namespace kovs::ovs
