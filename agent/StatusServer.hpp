#pragma once
// The agent's local control socket, for kovsctl and kovs-cni: a unix stream
// socket (mode 0600, root only) where each connection sends one JSON request
// line ({"command": "status"}) and gets one JSON reply, then the agent closes
// it (the client: base/UnixJsonRequest). Runs on the agent's event loop, so
// handlers see consistent state; a handler may answer later (Reply), e.g.
// once a pod's flows are installed.
//
// Bounded like the health server: a client must send its request line within
// kRequestTimeout and read its reply within kReplyTimeout, or it is closed;
// at most kMaxClients are open, and one beyond that closes the oldest still
// sending its request (a client that never sends a newline held an fd
// forever). A reply is written in full however large (a status with 1000
// peers), as the socket takes it, never cut at the first short write.
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/EventLoop.hpp"
#include "base/UniqueFd.hpp"

namespace kovs::agent {

class StatusServer {
public:
    using Reply = std::function<void(const nlohmann::json& answer)>;
    // Calls reply exactly once, now or later on the loop; a throw is answered
    // as {"error": what}.
    using Handler = std::function<void(const nlohmann::json& request, const Reply& reply)>;
    using SyncHandler = std::function<nlohmann::json(const nlohmann::json& request)>;

    // Creates the socket's directory if needed and replaces a stale socket.
    StatusServer(EventLoop& loop, std::string path, Handler handler);
    StatusServer(EventLoop& loop, std::string path, SyncHandler handler);
    ~StatusServer();
    StatusServer(const StatusServer&) = delete;
    StatusServer& operator=(const StatusServer&) = delete;

    const std::string& path() const { return path_; }
    size_t clients() const { return clients_.size(); }

    static constexpr size_t kMaxClients = 32;
    static constexpr std::chrono::seconds kRequestTimeout{5};
    static constexpr std::chrono::seconds kReplyTimeout{10};

private:
    struct Client {
        UniqueFd fd;
        uint64_t id = 0;
        std::string in;
        std::string out;        // the reply, as much of it as the socket has not taken yet
        bool reading = true;    // still sending its request
        bool writing = false;   // waiting for the socket to take more of the reply
        EventLoop::TimerId deadline = 0;
    };
    void accept();
    void onClient(int fd);
    void send(int fd);
    void finish(int fd);

    EventLoop& loop_;
    std::string path_;
    Handler handler_;
    UniqueFd listen_;
    std::map<int, Client> clients_;
    uint64_t nextClient_ = 0;
    uint64_t evicted_ = 0;
};

}  // namespace kovs::agent
