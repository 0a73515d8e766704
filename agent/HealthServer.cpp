#include "agent/HealthServer.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <future>
#include <optional>

#include "base/Error.hpp"
#include "base/WaitReady.hpp"

namespace kovs {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxRequestHead = 8192;
// Reading a request, and writing its answer, each get this long in all: a
// client trickling bytes must not hold the (only) serving thread for longer.
constexpr auto kIoBudget = std::chrono::seconds(2);

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

const char* reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    default: return "Service Unavailable";
    }
}

}  // namespace

void HealthServer::sendAll(int conn, std::string_view data) const {
    auto deadline = Clock::now() + kIoBudget;
    while (!data.empty()) {
        ssize_t n = ::send(conn, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN && waitReady(conn, POLLOUT, stop_.get(), deadline) == WaitResult::Ready) continue;
        if (n <= 0) return;  // the client went away, or stalled past the budget
        data.remove_prefix(static_cast<size_t>(n));
    }
}

HealthServer::HealthServer(EventLoop& loop, const std::string& address, HealthHandlers handlers)
    : loop_(loop), handlers_(std::move(handlers)), stop_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (!stop_) throwErrno("eventfd");
    auto colon = address.rfind(':');
    std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
    std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    if (colon == std::string::npos || port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535)
        throw Error("metrics address '" + address + "': expected host:port");

    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res); rc != 0)
        throw Error("metrics address '" + address + "': " + gai_strerror(rc));
    std::string why = "no address";
    for (addrinfo* ai = res; ai && !listen_; ai = ai->ai_next) {
        UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        int one = 1;
        if (fd) setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (fd && ::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd.get(), 16) == 0) {
            listen_ = std::move(fd);
        } else {
            why = std::strerror(errno);
        }
    }
    freeaddrinfo(res);
    if (!listen_) throw Error("metrics address '" + address + "': cannot listen: " + why);
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    thread_ = std::thread([this] { serve(); });
}

HealthServer::~HealthServer() {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_.get(), &one, sizeof one);
    if (thread_.joinable()) thread_.join();
}

void HealthServer::serve() {
    while (true) {
        pollfd fds[2] = {{listen_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
        if (fds[1].revents) return;
        if (!fds[0].revents) continue;
        UniqueFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
        if (conn) {
            answer(conn.get());
        } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            // The connection stays queued and the socket readable: pause
            // instead of spinning until descriptors or memory free up.
            pollfd stop = {stop_.get(), POLLIN, 0};
            ::poll(&stop, 1, 100);
        }
    }
}

void HealthServer::answer(int conn) {
    auto deadline = Clock::now() + kIoBudget;
    std::string head;
    char buf[2048];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() <= kMaxRequestHead) {
        ssize_t n = ::recv(conn, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN && waitReady(conn, POLLIN, stop_.get(), deadline) == WaitResult::Ready) continue;
        if (n <= 0) return;  // closed, failed, out of time, or the server is stopping
        head.append(buf, static_cast<size_t>(n));
    }

    Reply reply = route(head);
    std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason(reply.status) +
                      "\r\nContent-Type: " + reply.type + "\r\nContent-Length: " + std::to_string(reply.body.size()) +
                      "\r\nConnection: close\r\n\r\n" + reply.body;
    sendAll(conn, out);
}

HealthServer::Reply HealthServer::route(const std::string& head) {
    size_t end = head.find("\r\n\r\n");
    if (end == std::string::npos || end > kMaxRequestHead) return {400, "request headers too long\n"};
    // "GET /metrics?x HTTP/1.1"
    std::string_view line = std::string_view(head).substr(0, head.find("\r\n"));
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0) return {400, "bad request\n"};
    std::string_view method = line.substr(0, sp1);
    std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    if (method != "GET") return {405, "only GET is served here\n"};
    try {
        if (path == "/healthz") {
            bool alive = onLoop<bool>(loop_, [] { return true; }).has_value();
            return {alive ? 200 : 503, alive ? "ok\n" : "event loop not responding\n"};
        }
        if (path == "/readyz") {
            auto why = onLoop<std::string>(loop_, handlers_.ready);
            bool ok = why && why->empty();
            return {ok ? 200 : 503, ok ? "ready\n" : (why ? *why : "event loop not responding") + "\n"};
        }
        if (path == "/metrics") {
            auto text = onLoop<std::string>(loop_, handlers_.metrics);
            return {text ? 200 : 503, text ? *text : "event loop not responding\n", "text/plain; version=0.0.4"};
        }
    } catch (const std::exception& e) {
        // A handler that threw (out of memory, say) costs this answer, not the agent.
        return {500, std::string("internal error: ") + e.what() + "\n"};
    }
    return {404, "not found: /healthz, /readyz and /metrics are served here\n"};
}

}  // namespace kovs
