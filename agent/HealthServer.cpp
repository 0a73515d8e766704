#include "agent/HealthServer.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "base/Error.hpp"

namespace kovs::agent {

// Filled on the loop thread, drained by the serving thread; shared so that a
// task still queued on the loop after the server is gone writes into this,
// not into freed memory.
struct HealthServer::Answers {
    std::mutex mutex;
    std::vector<std::pair<uint64_t, std::string>> ready;  // connection id, HTTP response
    UniqueFd wake{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};

    void push(uint64_t id, std::string response) {
        {
            std::lock_guard lock(mutex);
            ready.emplace_back(id, std::move(response));
        }
        uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(wake.get(), &one, sizeof one);
    }
};

namespace {

constexpr size_t kMaxRequestHead = 8192;
// Reading a request, the loop's answer, and writing it each get this long in
// all: a client trickling bytes or never reading costs its own answer only.
constexpr auto kIoBudget = std::chrono::seconds(2);

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

std::string response(int status, const std::string& body, const std::string& type = "text/plain") {
    return "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

HealthServer::HealthServer(EventLoop& loop, const std::string& address, HealthHandlers handlers)
    : loop_(loop), handlers_(std::move(handlers)), stop_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      answers_(std::make_shared<Answers>()) {
    if (!stop_ || !answers_->wake) throwErrno("eventfd");
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
        // A backlog deep enough that a burst of connections waits in the
        // kernel for acceptAll() instead of having its SYNs dropped.
        if (fd && ::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd.get(), 128) == 0) {
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
    std::vector<pollfd> fds;
    while (true) {
        fds.clear();
        fds.push_back({stop_.get(), POLLIN, 0});
        fds.push_back({answers_->wake.get(), POLLIN, 0});
        bool acceptNow = Clock::now() >= acceptPausedUntil_;
        fds.push_back({acceptNow ? listen_.get() : -1, POLLIN, 0});
        auto next = acceptNow ? Clock::time_point::max() : acceptPausedUntil_;
        for (auto& c : connections_) {
            short events = c.state == Connection::State::Reading ? POLLIN : c.state == Connection::State::Writing ? POLLOUT : 0;
            fds.push_back({c.fd.get(), events, 0});
            next = std::min(next, c.deadline);
        }
        int timeout = -1;
        if (next != Clock::time_point::max()) {
            auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
            timeout = static_cast<int>(std::clamp<long long>(ms, 0, INT_MAX));
        }
        if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) return;
        if (fds[0].revents) return;
        if (fds[1].revents) takeAnswers();
        // fds[3...] are connections_ in order; new ones are appended after them.
        size_t i = 3;
        for (auto& c : connections_) {
            if (i >= fds.size()) break;
            short got = fds[i++].revents;
            if (!got || !c.fd) continue;
            if (c.state == Connection::State::Reading) read(c);
            else if (c.state == Connection::State::Writing) write(c);
            else if (got & (POLLHUP | POLLERR)) c.fd.reset();  // left while the loop answers
        }
        if (fds[2].revents) acceptAll();
        expire();
        connections_.remove_if([](const Connection& c) { return !c.fd; });
    }
}

void HealthServer::acceptAll() {
    while (true) {
        UniqueFd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
        if (!fd) {
            // Out of descriptors or memory: the connection stays queued and the
            // socket readable; pause instead of spinning until that passes.
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                acceptPausedUntil_ = Clock::now() + std::chrono::milliseconds(100);
            return;
        }
        size_t open = static_cast<size_t>(std::count_if(connections_.begin(), connections_.end(),
                                                        [](const Connection& c) { return bool(c.fd); }));
        if (open >= kMaxConnections) {
            // Full: the oldest connection that has not sent its request makes
            // room (a probe sends its request as soon as it connects).
            auto oldest = std::find_if(connections_.begin(), connections_.end(), [](const Connection& c) {
                return c.fd && c.state == Connection::State::Reading;
            });
            if (oldest == connections_.end()) continue;  // all busy with answers: drop the new one
            oldest->fd.reset();
        }
        connections_.push_back(Connection{nextId_++, std::move(fd), Connection::State::Reading, Clock::now() + kIoBudget, {}, 0});
    }
}

void HealthServer::read(Connection& c) {
    char buf[2048];
    while (c.data.find("\r\n\r\n") == std::string::npos && c.data.size() <= kMaxRequestHead) {
        ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // more later
        if (n <= 0) {
            c.fd.reset();  // closed or failed before the head ended
            return;
        }
        c.data.append(buf, static_cast<size_t>(n));
    }
    dispatch(c);
}

void HealthServer::dispatch(Connection& c) {
    const std::string& head = c.data;
    size_t end = head.find("\r\n\r\n");
    if (end == std::string::npos || end > kMaxRequestHead) return reply(c, response(400, "request headers too long\n"));
    // "GET /metrics?x HTTP/1.1"
    std::string_view line = std::string_view(head).substr(0, head.find("\r\n"));
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0)
        return reply(c, response(400, "bad request\n"));
    std::string_view method = line.substr(0, sp1);
    std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    if (method != "GET") return reply(c, response(405, "only GET is served here\n"));
    if (path == "/healthz") return ask(c, Query::Healthz);
    if (path == "/readyz") return ask(c, Query::Readyz);
    if (path == "/metrics") return ask(c, Query::Metrics);
    reply(c, response(404, "not found: /healthz, /readyz and /metrics are served here\n"));
}

// The answer is computed on the loop and comes back through answers_; until
// then the connection waits (and the others go on being served).
void HealthServer::ask(Connection& c, Query q) {
    c.state = Connection::State::Answering;
    c.deadline = Clock::now() + kIoBudget;
    c.data.clear();
    loop_.post([answers = answers_, handlers = handlers_, id = c.id, q] {
        std::string out;
        try {
            if (q == Query::Healthz) {
                out = response(200, "ok\n");
            } else if (q == Query::Readyz) {
                auto why = handlers.ready();
                out = why.empty() ? response(200, "ready\n") : response(503, why + "\n");
            } else {
                out = response(200, handlers.metrics(), "text/plain; version=0.0.4");
            }
        } catch (const std::exception& e) {
            // A handler that threw (out of memory, say) costs this answer, not the agent.
            out = response(500, std::string("internal error: ") + e.what() + "\n");
        }
        answers->push(id, std::move(out));
    });
}

void HealthServer::takeAnswers() {
    uint64_t n;
    while (::read(answers_->wake.get(), &n, sizeof n) > 0) {
    }
    std::vector<std::pair<uint64_t, std::string>> ready;
    {
        std::lock_guard lock(answers_->mutex);
        ready.swap(answers_->ready);
    }
    for (auto& [id, text] : ready) {
        auto c = std::find_if(connections_.begin(), connections_.end(), [id = id](const Connection& x) { return x.id == id; });
        // Ids are never reused: an answer for a connection that left or timed out is dropped.
        if (c != connections_.end() && c->fd && c->state == Connection::State::Answering) reply(*c, std::move(text));
    }
}

void HealthServer::reply(Connection& c, std::string text) {
    c.state = Connection::State::Writing;
    c.deadline = Clock::now() + kIoBudget;
    c.data = std::move(text);
    c.sent = 0;
    write(c);
}

void HealthServer::write(Connection& c) {
    while (c.sent < c.data.size()) {
        ssize_t n = ::send(c.fd.get(), c.data.data() + c.sent, c.data.size() - c.sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // the rest when writable
        if (n <= 0) break;                                               // the client went away
        c.sent += static_cast<size_t>(n);
    }
    c.fd.reset();  // one request per connection: done
}

void HealthServer::expire() {
    auto now = Clock::now();
    for (auto& c : connections_) {
        if (!c.fd || now < c.deadline) continue;
        if (c.state == Connection::State::Answering) {
            reply(c, response(503, "event loop not responding\n"));
        } else {
            c.fd.reset();  // a request or an answer that did not get through in time
        }
    }
}

}  // namespace kovs::agent
