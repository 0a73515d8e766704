#pragma once
// /healthz, /readyz and /metrics over HTTP (cpp-httplib on its own thread).
// Every answer is computed on the agent's event loop (the request is posted
// there), so a wedged loop makes /healthz fail — which is what liveness
// probes are for.
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/EventLoop.hpp"

namespace httplib {
class Server;
}

namespace kovs {

struct HealthHandlers {
    std::function<std::string()> ready;    // "" when ready, else why not
    std::function<std::string()> metrics;  // Prometheus text
};

class HealthServer {
public:
    // address: "host:port". Throws kovs::Error when it cannot bind.
    HealthServer(EventLoop& loop, const std::string& address, HealthHandlers handlers);
    ~HealthServer();
    HealthServer(const HealthServer&) = delete;
    HealthServer& operator=(const HealthServer&) = delete;

    int port() const { return port_; }

private:
    EventLoop& loop_;
    HealthHandlers handlers_;
    std::unique_ptr<httplib::Server> server_;
    std::thread thread_;
    int port_ = 0;
};

}  // namespace kovs
