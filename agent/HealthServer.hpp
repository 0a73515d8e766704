#pragma once
// /healthz, /readyz and /metrics over plain HTTP/1.1, on a thread of its own.
// Every answer is computed on the agent's event loop (the request is posted
// there), so a wedged loop makes /healthz fail — which is what liveness
// probes are for. One request per connection, one connection at a time:
// the clients are the kubelet's probes and a Prometheus scraper. A client
// gets 2 s in all to send its request and 2 s to take the answer, so a slow
// or silent one cannot hold the probes off for long, nor the agent's exit. Hand-written
// instead of cpp-httplib, whose shared library initialises OpenSSL when it is
// loaded — a fifth of the agent's memory target (docs/benchmarks.md).
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "base/EventLoop.hpp"
#include "base/UniqueFd.hpp"

namespace kovs {

struct HealthHandlers {
    std::function<std::string()> ready;    // "" when ready, else why not
    std::function<std::string()> metrics;  // Prometheus text
};

class HealthServer {
public:
    // address: "host:port" (port 0: any free port). Throws kovs::Error when it cannot bind.
    HealthServer(EventLoop& loop, const std::string& address, HealthHandlers handlers);
    ~HealthServer();
    HealthServer(const HealthServer&) = delete;
    HealthServer& operator=(const HealthServer&) = delete;

    int port() const { return port_; }

private:
    struct Reply {
        int status;
        std::string body;
        std::string type = "text/plain";
    };

    void serve();
    void answer(int conn);
    Reply route(const std::string& head);
    void sendAll(int conn, std::string_view data) const;

    EventLoop& loop_;
    HealthHandlers handlers_;
    UniqueFd listen_;
    UniqueFd stop_;  // eventfd
    std::thread thread_;
    int port_ = 0;
};

}  // namespace kovs
