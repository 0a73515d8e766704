#include "ovs/JsonRpcConnection.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cctype>
#include <cstring>
#include <optional>

#include "base/Error.hpp"
#include "base/UnixAddress.hpp"

namespace kovs::ovs {
namespace {

struct SocketAddress {
    sockaddr_storage storage{};
    socklen_t len = 0;
    const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// "tcp:IP:PORT", numeric only: getaddrinfo with a name would block the loop
// for as long as the resolver takes.
SocketAddress tcpAddress(const std::string& hostPort, const std::string& remote) {
    auto colon = hostPort.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == hostPort.size())
        throw Error("connect " + remote + ": expected tcp:IP:PORT");
    std::string host = hostPort.substr(0, colon), port = hostPort.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
    if (rc == EAI_NONAME)
        throw Error("connect " + remote + ": '" + host + "' is not an IP address (host names are not looked up: that would block the agent)");
    if (rc != 0) throw Error("connect " + remote + ": " + ::gai_strerror(rc));
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, ::freeaddrinfo);
    SocketAddress a;
    std::memcpy(&a.storage, res->ai_addr, res->ai_addrlen);
    a.len = res->ai_addrlen;
    return a;
}

SocketAddress unixSocketAddress(const std::string& path) {
    auto sa = unixAddress(path, "connect");
    SocketAddress a;
    std::memcpy(&a.storage, &sa, sizeof sa);
    a.len = sizeof sa;
    return a;
}

}  // namespace

std::string jsonRpcErrorText(const nlohmann::json& error) {
    if (error.is_string()) {
        std::string s = error.get<std::string>();
        while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
        return s;
    }
    if (error.is_object() && error.contains("error") && error["error"].is_string()) {
        std::string s = error["error"].get<std::string>();
        if (error.contains("details") && error["details"].is_string()) s += ": " + error["details"].get<std::string>();
        return s;
    }
    return error.dump();
}

JsonRpcConnection::JsonRpcConnection(EventLoop& loop, const std::string& remote, Duration connectTimeout)
    : loop_(loop), remote_(remote) {
    startConnect(connectTimeout);
}

void JsonRpcConnection::startConnect(Duration timeout) {
    SocketAddress addr;
    std::string name;  // as errors name it: the path for unix sockets
    if (remote_.rfind("tcp:", 0) == 0) {
        addr = tcpAddress(remote_.substr(4), remote_);
        name = remote_;
    } else if (remote_.rfind("unix:", 0) == 0 || (!remote_.empty() && remote_[0] == '/')) {
        name = remote_[0] == '/' ? remote_ : remote_.substr(5);
        addr = unixSocketAddress(name);
    } else {
        throw Error("connect " + remote_ + ": expected unix:PATH, /PATH or tcp:IP:PORT");
    }
    UniqueFd fd(::socket(addr.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) throwErrno("socket for " + remote_);
    int rc;
    while ((rc = ::connect(fd.get(), addr.get(), addr.len)) < 0 && errno == EINTR) {
    }
    if (rc < 0 && errno != EINPROGRESS) {
        // A unix socket whose listen queue is full says EAGAIN: its daemon
        // has stopped accepting (hung, or stopped with SIGSTOP).
        if (errno == EAGAIN) throw Error("connect " + name + ": listen queue full (the daemon does not accept connections)");
        throwErrno("connect " + name);
    }
    fd_ = std::move(fd);
    connecting_ = rc < 0;
    loop_.watch(fd_.get(), connecting_ ? EPOLLOUT : EPOLLIN, [this](uint32_t ev) { onEvents(ev); });
    if (connecting_) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
        connectTimer_ = loop_.after(timeout, [this, ms] {
            connectTimer_ = 0;
            close("connect " + remote_ + ": timed out after " + std::to_string(ms) + " ms");
        });
    }
}

void JsonRpcConnection::finishConnect() {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
    if (err != 0) {
        close("connect " + remote_ + ": " + std::strerror(err));
        return;
    }
    connecting_ = false;
    if (connectTimer_) loop_.cancel(connectTimer_);
    connectTimer_ = 0;
    loop_.modify(fd_.get(), EPOLLIN);
    wantWrite_ = false;
    flush();  // what was requested while connecting
}

JsonRpcConnection::~JsonRpcConnection() {
    *alive_ = false;
    for (auto& [id, p] : pending_) loop_.cancel(p.timer);
    if (connectTimer_) loop_.cancel(connectTimer_);
    if (fd_) loop_.unwatch(fd_.get());
}

void JsonRpcConnection::close(const std::string& reason) {
    if (!fd_) return;
    loop_.unwatch(fd_.get());
    fd_.reset();
    connecting_ = false;
    if (connectTimer_) loop_.cancel(connectTimer_);
    connectTimer_ = 0;
    out_.clear();
    auto token = alive_;
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, p] : pending) loop_.cancel(p.timer);
    for (auto& [id, p] : pending) {
        if (p.onError) p.onError("connection to " + remote_ + " closed: " + reason);
        if (!*token) return;
    }
    if (onClose_) {
        auto h = onClose_;  // the handler may destroy us
        h(reason);
    }
}

uint64_t JsonRpcConnection::request(const std::string& method, const nlohmann::json& params, ReplyCallback onReply,
                                    ErrorCallback onError, Duration timeout) {
    uint64_t id = nextId_++;
    if (!fd_) {
        // Report asynchronously so callers see one code path for every failure.
        auto token = alive_;
        std::string why = "connection to " + remote_ + " is closed";
        loop_.post([token, onError, why] {
            if (*token && onError) onError(why);
        });
        return id;
    }
    auto timer = loop_.after(timeout, [this, id] {
        auto it = pending_.find(id);
        if (it == pending_.end()) return;
        auto cb = std::move(it->second.onError);
        pending_.erase(it);
        if (cb) cb("timed out");
    });
    pending_[id] = Pending{method, std::move(onReply), std::move(onError), timer};
    send({{"method", method}, {"params", params}, {"id", id}});
    return id;
}

void JsonRpcConnection::notify(const std::string& method, const nlohmann::json& params) {
    if (fd_) send({{"method", method}, {"params", params}, {"id", nullptr}});
}

nlohmann::json JsonRpcConnection::call(const std::string& method, const nlohmann::json& params, Duration timeout) {
    struct Outcome {
        std::optional<nlohmann::json> result;
        std::optional<std::string> error;
    };
    auto out = std::make_shared<Outcome>();
    // The loop's own deadline is a backstop; the request timer reports first.
    request(
        method, params, [out](const nlohmann::json& r) { out->result = r; },
        [out](const std::string& e) { out->error = e; }, timeout);
    loop_.runUntil([&] { return out->result || out->error; }, timeout + std::chrono::seconds(1));
    if (out->result) return *out->result;
    const auto& error = out->error;
    throw Error(method + ": " + (error ? *error : std::string("timed out")));
}

void JsonRpcConnection::send(const nlohmann::json& msg) {
    out_ += msg.dump();
    flush();
}

void JsonRpcConnection::flush() {
    if (connecting_) return;  // sent once connected
    while (fd_ && !out_.empty()) {
        ssize_t n = ::send(fd_.get(), out_.data(), out_.size(), MSG_NOSIGNAL);
        if (n > 0) {
            out_.erase(0, static_cast<size_t>(n));
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            // Let the read side see the hangup and run close() from the loop, so
            // a request() caller never gets its error callback re-entrantly.
            out_.clear();
            break;
        }
    }
    updateInterest();
}

void JsonRpcConnection::updateInterest() {
    if (connecting_) return;
    bool want = fd_ && !out_.empty();
    if (fd_ && want != wantWrite_) {
        loop_.modify(fd_.get(), EPOLLIN | (want ? EPOLLOUT : 0u));
        wantWrite_ = want;
    }
}

void JsonRpcConnection::onEvents(uint32_t events) {
    auto token = alive_;
    if (connecting_) {
        finishConnect();
        return;
    }
    if (events & EPOLLOUT) flush();
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
    char buf[65536];
    while (fd_) {
        ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n <= 0) {
            close(n == 0 ? "peer closed the connection" : std::string("recv: ") + std::strerror(errno));
            return;
        }
        std::vector<nlohmann::json> msgs;
        try {
            msgs = parser_.feed(std::string_view(buf, static_cast<size_t>(n)));
        } catch (const Error& e) {
            close(e.what());
            return;
        }
        for (const auto& m : msgs) {
            dispatch(m);
            if (!*token || !fd_) return;
        }
    }
}

void JsonRpcConnection::dispatch(const nlohmann::json& msg) {
    if (!msg.is_object()) {
        close("JSON-RPC message is not an object: " + msg.dump().substr(0, 200));
        return;
    }
    auto method = msg.find("method");
    if (method != msg.end() && method->is_string()) {
        auto params = msg.value("params", nlohmann::json::array());
        auto id = msg.find("id");
        bool isRequest = id != msg.end() && !id->is_null();
        if (isRequest && *method == "echo") {
            send({{"result", params}, {"error", nullptr}, {"id", *id}});
        } else if (isRequest) {
            send({{"result", nullptr}, {"error", "unknown method"}, {"id", *id}});
        } else if (onNotification_) {
            onNotification_(method->get<std::string>(), params);
        }
        return;
    }
    auto id = msg.find("id");
    if (id == msg.end() || !id->is_number_unsigned()) return;  // e.g. a reply to our notify-less echo: ignore
    auto it = pending_.find(id->get<uint64_t>());
    if (it == pending_.end()) return;  // late reply after a timeout
    Pending p = std::move(it->second);
    pending_.erase(it);
    loop_.cancel(p.timer);
    auto err = msg.find("error");
    if (err != msg.end() && !err->is_null()) {
        if (p.onError) p.onError(jsonRpcErrorText(*err));
    } else if (p.onReply) {
        p.onReply(msg.value("result", nlohmann::json()));
    }
}

}  // namespace kovs::ovs
