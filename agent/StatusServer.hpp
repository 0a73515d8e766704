#pragma once
// The agent's local control socket, for kovsctl: a unix stream socket (mode
// 0600, root only) where each connection sends one JSON request line
// ({"command": "status"}) and gets one JSON reply, then the agent closes it.
// Runs on the agent's event loop, so handlers see consistent state.
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/EventLoop.hpp"
#include "base/UniqueFd.hpp"

namespace kovs {

class StatusServer {
public:
    using Handler = std::function<nlohmann::json(const nlohmann::json& request)>;

    // Creates the socket's directory if needed and replaces a stale socket.
    StatusServer(EventLoop& loop, std::string path, Handler handler);
    ~StatusServer();
    StatusServer(const StatusServer&) = delete;
    StatusServer& operator=(const StatusServer&) = delete;

    const std::string& path() const { return path_; }

private:
    struct Client {
        UniqueFd fd;
        std::string in;
    };
    void accept();
    void onClient(int fd);
    void finish(int fd);

    EventLoop& loop_;
    std::string path_;
    Handler handler_;
    UniqueFd listen_;
    std::map<int, Client> clients_;
};

// Client side (kovsctl): sends one request, returns the reply; throws kovs::Error.
nlohmann::json statusRequest(const std::string& path, const nlohmann::json& request, int timeoutMs = 5000);

}  // namespace kovs
