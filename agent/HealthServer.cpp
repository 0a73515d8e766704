#include "agent/HealthServer.hpp"

#include <httplib.h>

#include <future>
#include <optional>

#include "base/Error.hpp"

namespace kovs {
namespace {

// Runs fn on the loop and waits for it; nullopt when the loop did not answer in time.
template <typename T>
std::optional<T> onLoop(EventLoop& loop, std::function<T()> fn) {
    auto promise = std::make_shared<std::promise<T>>();
    auto future = promise->get_future();
    loop.post([promise, fn] {
        try {
            promise->set_value(fn());
        } catch (...) {
            promise->set_exception(std::current_exception());
        }
    });
    if (future.wait_for(std::chrono::seconds(2)) != std::future_status::ready) return std::nullopt;
    return future.get();
}

}  // namespace

HealthServer::HealthServer(EventLoop& loop, const std::string& address, HealthHandlers handlers)
    : loop_(loop), handlers_(std::move(handlers)), server_(std::make_unique<httplib::Server>()) {
    auto colon = address.rfind(':');
    int port = -1;
    if (colon != std::string::npos) {
        try {
            port = std::stoi(address.substr(colon + 1));
        } catch (const std::exception&) {
        }
    }
    if (colon == std::string::npos || port < 0 || port > 65535)
        throw Error("metrics address '" + address + "': expected host:port");
    std::string host = address.substr(0, colon);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);

    server_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
        auto alive = onLoop<bool>(loop_, [] { return true; });
        res.status = alive ? 200 : 503;
        res.set_content(alive ? "ok\n" : "event loop not responding\n", "text/plain");
    });
    server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
        auto why = onLoop<std::string>(loop_, handlers_.ready);
        bool ok = why && why->empty();
        res.status = ok ? 200 : 503;
        res.set_content(ok ? "ready\n" : (why ? *why : "event loop not responding") + "\n", "text/plain");
    });
    server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        auto text = onLoop<std::string>(loop_, handlers_.metrics);
        res.status = text ? 200 : 503;
        res.set_content(text ? *text : "event loop not responding\n", "text/plain; version=0.0.4");
    });
    if (port == 0) {
        port_ = server_->bind_to_any_port(host);
        if (port_ <= 0) throw Error("metrics address '" + address + "': cannot bind");
    } else {
        if (!server_->bind_to_port(host, port)) throw Error("metrics address '" + address + "': cannot bind (in use?)");
        port_ = port;
    }
    thread_ = std::thread([this] { server_->listen_after_bind(); });
}

HealthServer::~HealthServer() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
}

}  // namespace kovs
