#include "kube/KubeHttpClient.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <optional>

#include "base/Error.hpp"
#include "base/WaitReady.hpp"
#include "kube/HttpResponseParser.hpp"
#include "kube/TlsSession.hpp"

namespace kovs::kube {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kConnectTimeout = std::chrono::seconds(10);

struct Interrupted {};

template <auto Free>
struct Deleter {
    template <typename T>
    void operator()(T* p) const { Free(p); }
};

// One TCP connection, TLS or not, on a non-blocking socket. Every wait also
// watches `wake` (throws Interrupted) and a deadline (throws Error).
class Connection {
public:
    Connection(const KubeHttpClient::Url& url, const KubeCredentials& creds, int wake) : wake_(wake) {
        auto deadline = Clock::now() + kConnectTimeout;
        connectTcp(url, deadline);
        if (!url.tls) return;
        tls_.emplace(creds, url.host, fd_.get());
        for (auto want = tls_->handshake(); want != TlsSession::Want::Nothing; want = tls_->handshake())
            wait(want, deadline, "TLS handshake");
    }

    void writeAll(std::string_view data) {
        auto deadline = Clock::now() + kConnectTimeout;
        while (!data.empty()) {
            if (tls_) {
                if (auto want = tls_->write(data); want != TlsSession::Want::Nothing)
                    wait(want, deadline, "sending the request");
                continue;
            }
            ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
            if (n >= 0) {
                data.remove_prefix(static_cast<size_t>(n));
            } else if (errno == EAGAIN) {
                wait(POLLOUT, deadline, "sending the request");
            } else if (errno != EINTR) {
                throwErrno("send");
            }
        }
    }

    // Bytes read, 0 when the server closed the connection (cleanly or not:
    // whether the body was complete is the parser's call).
    size_t read(char* buf, size_t size, std::chrono::seconds idle) {
        auto deadline = Clock::now() + idle;
        const std::string what = "waiting for the API server (no data for " + std::to_string(idle.count()) + " s)";
        while (true) {
            if (tls_) {
                size_t n = 0;
                auto want = tls_->read(buf, size, n);
                if (want == TlsSession::Want::Nothing) return n;
                wait(want, deadline, what);
                continue;
            }
            ssize_t n = ::recv(fd_.get(), buf, size, 0);
            if (n >= 0) return static_cast<size_t>(n);
            if (errno == EAGAIN) {
                wait(POLLIN, deadline, what);
            } else if (errno != EINTR) {
                throwErrno("connection lost (recv)");
            }
        }
    }

private:
    void connectTcp(const KubeHttpClient::Url& url, Clock::time_point deadline) {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* res = nullptr;
        if (int rc = getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &res); rc != 0)
            throw Error("resolve " + url.host + ": " + gai_strerror(rc));
        std::unique_ptr<addrinfo, Deleter<freeaddrinfo>> guard(res);
        std::string lastError;
        int left = 0;
        for (addrinfo* ai = res; ai; ai = ai->ai_next) ++left;
        for (addrinfo* ai = res; ai; ai = ai->ai_next, --left) {
            fd_.reset(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
            if (!fd_) throwErrno("socket");
            int err = 0;
            if (::connect(fd_.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
                if (errno != EINPROGRESS) {
                    lastError = std::strerror(errno);
                    continue;
                }
                // A blackholed address (say an unreachable AAAA listed first)
                // gets its share of the time, not all of it.
                auto share = Clock::now() + (deadline - Clock::now()) / left;
                try {
                    wait(POLLOUT, share, "connect");
                } catch (const Error&) {
                    lastError = "timed out";
                    continue;
                }
                socklen_t len = sizeof err;
                getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
            }
            if (err != 0) {
                lastError = std::strerror(err);
                continue;
            }
            int one = 1, idle = 30, interval = 10, count = 3;
            setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            setsockopt(fd_.get(), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
            setsockopt(fd_.get(), IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
            setsockopt(fd_.get(), IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
            setsockopt(fd_.get(), IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
            return;
        }
        throw Error("connect to " + url.host + ":" + url.port + ": " + lastError);
    }

    void wait(TlsSession::Want want, Clock::time_point deadline, const std::string& what) {
        wait(want == TlsSession::Want::Read ? POLLIN : POLLOUT, deadline, what);
    }
    void wait(short events, Clock::time_point deadline, const std::string& what) {
        switch (waitReady(fd_.get(), events, wake_, deadline)) {
            case WaitResult::Ready: return;  // POLLERR/POLLHUP too: the next call reports it
            case WaitResult::Woken: throw Interrupted{};
            case WaitResult::TimedOut: throw Error(what + ": timed out");
            case WaitResult::Failed: throwErrno("poll");
        }
    }

    int wake_;
    UniqueFd fd_;
    std::optional<TlsSession> tls_;  // after fd_: destroyed before the socket closes
};

}  // namespace

KubeHttpClient::Url KubeHttpClient::parseUrl(const std::string& server) {
    Url u;
    std::string rest;
    if (server.rfind("https://", 0) == 0) {
        rest = server.substr(8);
    } else if (server.rfind("http://", 0) == 0) {
        u.tls = false;
        rest = server.substr(7);
    } else {
        throw Error("API server '" + server + "': expected https://host[:port]");
    }
    size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    if (slash != std::string::npos) u.basePath = rest.substr(slash);
    while (!u.basePath.empty() && u.basePath.back() == '/') u.basePath.pop_back();
    if (!authority.empty() && authority.front() == '[') {
        size_t close = authority.find(']');
        if (close == std::string::npos) throw Error("API server '" + server + "': unterminated IPv6 address");
        u.host = authority.substr(1, close - 1);
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') throw Error("API server '" + server + "': junk after the IPv6 address");
            u.port = authority.substr(close + 2);
        }
    } else {
        size_t colon = authority.find(':');
        u.host = authority.substr(0, colon);
        if (colon != std::string::npos) u.port = authority.substr(colon + 1);
    }
    if (u.host.empty() || u.host.find_first_of("@?# ") != std::string::npos)
        throw Error("API server '" + server + "': no host");
    if (u.port.empty()) u.port = u.tls ? "443" : "80";
    if (u.port.find_first_not_of("0123456789") != std::string::npos || u.port.size() > 5 || std::stoi(u.port) == 0 ||
        std::stoi(u.port) > 65535)
        throw Error("API server '" + server + "': bad port '" + u.port + "'");
    return u;
}

KubeHttpClient::KubeHttpClient(KubeCredentials creds)
    : creds_(std::move(creds)), url_(parseUrl(creds_.server)), wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (!wake_) throwErrno("eventfd");
    // The token is the agent's identity to the whole API: over http:// anyone
    // on the path reads it, and with insecure-skip-tls-verify anyone who
    // answers in the server's place is handed it.
    const bool hasToken = !creds_.token.empty() || !creds_.tokenFile.empty();
    if (hasToken && !creds_.allowUnprotectedToken && (!url_.tls || creds_.insecureSkipTlsVerify)) {
        throw Error("API server " + creds_.server + ": refusing to send the bearer token " +
                    (url_.tls ? "with insecure-skip-tls-verify (any server could take it)" : "over plain http (anyone on the path could read it)") +
                    "; use https with the cluster's CA, or set peers.allowUnprotectedToken: true on purpose");
    }
}

void KubeHttpClient::interrupt() {
    interrupted_ = true;
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof one);  // stays readable: nobody reads it
}

KubeHttpClient::Result KubeHttpClient::get(const std::string& path, const OnData& onData,
                                           std::chrono::seconds idleTimeout) {
    Result r;
    if (interrupted_) {
        r.interrupted = true;
        return r;
    }
    std::string request = "GET " + url_.basePath + path + " HTTP/1.1\r\nHost: " +
                          (url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host) + ":" +
                          url_.port + "\r\nAccept: application/json\r\nUser-Agent: kovs-agent\r\n";
    std::string token = creds_.bearerToken();
    if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
    request += "Connection: close\r\n\r\n";

    HttpResponseParser parser;
    bool aborted = false;
    try {
        Connection conn(url_, creds_, wake_.get());
        conn.writeAll(request);
        char buf[16384];
        while (!parser.done()) {
            if (interrupted_) throw Interrupted{};  // a stream that never pauses never polls the eventfd
            size_t n = conn.read(buf, sizeof buf, idleTimeout);
            if (n == 0) {
                if (!parser.closeEndsBody())
                    r.error = parser.headComplete() ? "connection closed before the end of the body"
                                                    : "connection closed before a response";
                break;
            }
            bool more = parser.feed({buf, n}, [&](std::string_view d) { return onData(parser.status(), d); });
            if (!more) {
                aborted = true;
                r.error = "aborted by the client";
                break;
            }
        }
    } catch (const Interrupted&) {
        r.interrupted = true;
    } catch (const Error& e) {
        r.error = e.what();
    }
    r.status = parser.headComplete() ? parser.status() : 0;
    r.complete = parser.done() && !aborted && !r.interrupted;
    if (!r.complete && r.error.empty() && !r.interrupted) r.error = "incomplete response";
    return r;
}

}  // namespace kovs::kube
