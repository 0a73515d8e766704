#pragma once
// /healthz, /readyz and /metrics over plain HTTP/1.1, on a thread of its own.
// Every answer is computed on the agent's event loop (the request is posted
// there), so a wedged loop makes /healthz fail — which is what liveness
// probes are for. One request per connection.
//
// The clients are kubelet's probes and a Prometheus scraper, but anything on
// the node can connect: connections are served side by side (one poll over
// all of them), each gets 2 s in all to send its request, the loop 2 s to
// answer it (else 503) and the client 2 s to take the answer. At most
// kMaxConnections are open; a new one beyond that closes the oldest that
// has not sent its request yet. So idle or trickling connections, however
// many, never keep a probe from its answer (issue 15: 4 idle connections used
// to hold the old one-at-a-time server past kubelet's 3 s probe timeout).
//
// Hand-written instead of cpp-httplib, whose shared library initialises
// OpenSSL when it is loaded — a fifth of the agent's memory target
// (docs/benchmarks.md).
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "base/EventLoop.hpp"
#include "base/UniqueFd.hpp"

namespace kovs::agent {

struct HealthHandlers {
    std::function<std::string()> ready;    // "" when ready, else why not
    std::function<std::string()> metrics;  // Prometheus text
};

class HealthServer {
public:
    static constexpr size_t kMaxConnections = 64;

    // address: "host:port" (port 0: any free port). Throws kovs::Error when it cannot bind.
    HealthServer(EventLoop& loop, const std::string& address, HealthHandlers handlers);
    ~HealthServer();
    HealthServer(const HealthServer&) = delete;
    HealthServer& operator=(const HealthServer&) = delete;

    int port() const { return port_; }

    // Answers computed on the loop, handed back to the serving thread.
    struct Answers;

private:
    using Clock = std::chrono::steady_clock;
    enum class Query { Healthz, Readyz, Metrics };
    struct Connection {
        uint64_t id;
        UniqueFd fd;
        enum class State { Reading, Answering, Writing } state = State::Reading;
        Clock::time_point deadline;
        std::string data;  // the request head while reading, the answer while writing
        size_t sent = 0;
    };

    void serve();
    void acceptAll();
    void read(Connection& c);
    void write(Connection& c);
    void dispatch(Connection& c);
    void ask(Connection& c, Query q);
    void takeAnswers();
    void expire();
    void reply(Connection& c, std::string response);

    EventLoop& loop_;
    HealthHandlers handlers_;
    UniqueFd listen_;
    UniqueFd stop_;  // eventfd
    std::shared_ptr<Answers> answers_;
    std::list<Connection> connections_;  // oldest first
    uint64_t nextId_ = 1;
    Clock::time_point acceptPausedUntil_{};
    std::thread thread_;
    int port_ = 0;
};

}  // namespace kovs::agent
