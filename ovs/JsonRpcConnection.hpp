#pragma once
// One JSON-RPC 1.0 session as OVS speaks it (OVSDB, unixctl): unframed JSON
// values over a unix or TCP stream socket, driven by an EventLoop. Requests
// get integer ids and a timeout; replies are matched to their callbacks;
// notifications go to a handler; "echo" requests from the peer are answered.
//
// Nothing here blocks the loop: the connect is non-blocking with a deadline
// (an unreachable tcp: remote would otherwise hold the agent for the
// kernel's SYN retries, two minutes), and requests made while it is under
// way are sent once it completes.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/EventLoop.hpp"
#include "base/UniqueFd.hpp"
#include "ovs/JsonStreamParser.hpp"

namespace kovs::ovs {

class JsonRpcConnection {
public:
    using Duration = std::chrono::milliseconds;
    using ReplyCallback = std::function<void(const nlohmann::json& result)>;
    // Called with the peer's error text, "timed out", or why the connection closed.
    using ErrorCallback = std::function<void(const std::string& error)>;
    using NotificationHandler = std::function<void(const std::string& method, const nlohmann::json& params)>;
    using CloseHandler = std::function<void(const std::string& reason)>;

    // remote: "/path", "unix:/path" or "tcp:IP:PORT" ("tcp:[IPv6]:PORT"); no
    // host names, whose lookup would block. Starts connecting now: throws
    // kovs::Error naming the remote when that fails at once (a bad remote, no
    // such socket, refused); a TCP connect that fails later or takes longer
    // than connectTimeout closes the connection (close handler, pending
    // requests' error callbacks) with the reason.
    JsonRpcConnection(EventLoop& loop, const std::string& remote,
                      Duration connectTimeout = std::chrono::seconds(5));
    ~JsonRpcConnection();
    JsonRpcConnection(const JsonRpcConnection&) = delete;
    JsonRpcConnection& operator=(const JsonRpcConnection&) = delete;

    // Exactly one of onReply/onError runs, on the loop, unless the connection
    // is destroyed first (then neither does).
    uint64_t request(const std::string& method, const nlohmann::json& params, ReplyCallback onReply,
                     ErrorCallback onError, Duration timeout = std::chrono::seconds(5));
    void notify(const std::string& method, const nlohmann::json& params);

    // Synchronous convenience for short-lived callers: runs the loop until the
    // reply arrives. Throws kovs::Error("<method>: <error>") on error/timeout.
    nlohmann::json call(const std::string& method, const nlohmann::json& params,
                        Duration timeout = std::chrono::seconds(5));

    void setNotificationHandler(NotificationHandler h) { onNotification_ = std::move(h); }
    // Runs once when the peer closes, the stream is garbage or close() is called.
    void setCloseHandler(CloseHandler h) { onClose_ = std::move(h); }

    // Connecting or connected (requests are accepted).
    bool isOpen() const { return static_cast<bool>(fd_); }
    bool isConnected() const { return fd_ && !connecting_; }
    void close(const std::string& reason = "closed by client");
    const std::string& remote() const { return remote_; }
    size_t pendingRequests() const { return pending_.size(); }

private:
    struct Pending {
        std::string method;
        ReplyCallback onReply;
        ErrorCallback onError;
        EventLoop::TimerId timer;
    };

    void startConnect(Duration timeout);
    void finishConnect();
    void send(const nlohmann::json& msg);
    void flush();
    void onEvents(uint32_t events);
    void dispatch(const nlohmann::json& msg);
    void updateInterest();

    EventLoop& loop_;
    std::string remote_;
    UniqueFd fd_;
    bool connecting_ = false;
    EventLoop::TimerId connectTimer_ = 0;
    JsonStreamParser parser_;
    std::string out_;
    bool wantWrite_ = false;
    uint64_t nextId_ = 1;
    std::unordered_map<uint64_t, Pending> pending_;
    NotificationHandler onNotification_;
    CloseHandler onClose_;
    // Callbacks may destroy this connection; they check this token afterwards.
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Formats a JSON-RPC/OVSDB error value as text: a string stays as is, an
// OVSDB error object becomes "<error>: <details>".
std::string jsonRpcErrorText(const nlohmann::json& error);

}  // namespace kovs::ovs
