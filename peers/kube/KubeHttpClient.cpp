#include "peers/kube/KubeHttpClient.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <csignal>
#include <cstring>
#include <memory>
#include <vector>

#include "base/Error.hpp"
#include "base/WaitReady.hpp"
#include "peers/kube/HttpResponseParser.hpp"

namespace kovs::tunnel {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kConnectTimeout = std::chrono::seconds(10);

struct Interrupted {};

template <auto Free>
struct Deleter {
    template <typename T>
    void operator()(T* p) const { Free(p); }
};
using SslCtx = std::unique_ptr<SSL_CTX, Deleter<SSL_CTX_free>>;
using Ssl = std::unique_ptr<SSL, Deleter<SSL_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using Pkey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;

// `what`, then OpenSSL's queued errors.
[[noreturn]] void throwSsl(const std::string& what) {
    std::string msg = what;
    const char* sep = ": ";
    while (unsigned long e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        msg += sep;
        msg += buf;
        sep = "; ";
    }
    throw Error(msg);
}

Bio memBio(const std::string& pem) {
    Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) throwSsl("BIO_new_mem_buf");
    return bio;
}

// Every certificate in PEM text, in order; throws when there is none.
std::vector<X509Ptr> pemCertificates(const std::string& pem, const std::string& what) {
    std::vector<X509Ptr> certs;
    Bio bio = memBio(pem);
    while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) certs.emplace_back(x);
    if (certs.empty()) throwSsl(what + ": no PEM certificate");
    ERR_clear_error();  // the read that ended the loop queued "no start line"
    return certs;
}

SslCtx tlsContext(const KubeCredentials& c) {
    SslCtx ctx(SSL_CTX_new(TLS_client_method()));
    if (!ctx) throwSsl("SSL_CTX_new");
    SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
    if (!c.insecureSkipTlsVerify) {
        SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
        if (!c.caData.empty()) {
            for (auto& cert : pemCertificates(c.caData, "certificate-authority-data"))
                if (X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), cert.get()) != 1)
                    throwSsl("certificate-authority-data");
        }
        if (!c.caFile.empty() && SSL_CTX_load_verify_locations(ctx.get(), c.caFile.c_str(), nullptr) != 1)
            throwSsl("CA file " + c.caFile);
        if (c.caData.empty() && c.caFile.empty() && SSL_CTX_set_default_verify_paths(ctx.get()) != 1)
            throwSsl("system CA store");
    }
    if (!c.clientCertData.empty()) {
        auto certs = pemCertificates(c.clientCertData, "client-certificate-data");
        if (SSL_CTX_use_certificate(ctx.get(), certs[0].get()) != 1) throwSsl("client-certificate-data");
        for (size_t i = 1; i < certs.size(); ++i)
            if (SSL_CTX_add1_chain_cert(ctx.get(), certs[i].get()) != 1) throwSsl("client-certificate-data chain");
    }
    if (!c.clientCertFile.empty() && SSL_CTX_use_certificate_chain_file(ctx.get(), c.clientCertFile.c_str()) != 1)
        throwSsl("client certificate " + c.clientCertFile);
    if (!c.clientKeyData.empty()) {
        Bio bio = memBio(c.clientKeyData);
        Pkey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
        if (!key || SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1) throwSsl("client-key-data");
    }
    if (!c.clientKeyFile.empty() &&
        SSL_CTX_use_PrivateKey_file(ctx.get(), c.clientKeyFile.c_str(), SSL_FILETYPE_PEM) != 1)
        throwSsl("client key " + c.clientKeyFile);
    bool haveCert = !c.clientCertData.empty() || !c.clientCertFile.empty();
    if (haveCert && SSL_CTX_check_private_key(ctx.get()) != 1) throwSsl("client certificate and key do not match");
    return ctx;
}

bool isIpLiteral(const std::string& host) {
    unsigned char buf[sizeof(in6_addr)];
    return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// One TCP connection, TLS or not, on a non-blocking socket. Every wait also
// watches `wake` (throws Interrupted) and a deadline (throws Error).
class Connection {
public:
    Connection(const KubeHttpClient::Url& url, const KubeCredentials& creds, int wake) : wake_(wake) {
        auto deadline = Clock::now() + kConnectTimeout;
        connectTcp(url, deadline);
        if (!url.tls) return;
        ctx_ = tlsContext(creds);
        ssl_.reset(SSL_new(ctx_.get()));
        if (!ssl_ || SSL_set_fd(ssl_.get(), fd_.get()) != 1) throwSsl("SSL_new");
        if (isIpLiteral(url.host)) {
            if (!creds.insecureSkipTlsVerify &&
                X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_.get()), url.host.c_str()) != 1)
                throwSsl("TLS: verify IP " + url.host);
        } else {
            SSL_set_tlsext_host_name(ssl_.get(), url.host.c_str());
            if (!creds.insecureSkipTlsVerify && SSL_set1_host(ssl_.get(), url.host.c_str()) != 1)
                throwSsl("TLS: verify host " + url.host);
        }
        while (true) {
            int r = SSL_connect(ssl_.get());
            if (r == 1) break;
            int err = SSL_get_error(ssl_.get(), r);
            if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
                long verify = SSL_get_verify_result(ssl_.get());
                if (verify != X509_V_OK)
                    throw Error(std::string("TLS: server certificate: ") + X509_verify_cert_error_string(verify));
                throwSsl("TLS handshake");
            }
            wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, "TLS handshake");
        }
    }

    void writeAll(std::string_view data) {
        auto deadline = Clock::now() + kConnectTimeout;
        while (!data.empty()) {
            if (ssl_) {
                size_t n = 0;
                int r = SSL_write_ex(ssl_.get(), data.data(), data.size(), &n);
                if (r == 1) {
                    data.remove_prefix(n);
                    continue;
                }
                int err = SSL_get_error(ssl_.get(), r);
                if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) throwSsl("TLS write");
                wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, "sending the request");
            } else {
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
    }

    // Bytes read, 0 when the server closed the connection cleanly.
    size_t read(char* buf, size_t size, std::chrono::seconds idle) {
        auto deadline = Clock::now() + idle;
        const std::string what = "waiting for the API server (no data for " + std::to_string(idle.count()) + " s)";
        while (true) {
            if (ssl_) {
                size_t n = 0;
                errno = 0;
                int r = SSL_read_ex(ssl_.get(), buf, size, &n);
                if (r == 1) return n;
                int err = SSL_get_error(ssl_.get(), r);
                // A server that closes without close_notify ends the stream just
                // as well; whether the body was complete is the parser's call.
                // SSL_ERROR_SYSCALL with errno set is a reset, not an end.
                if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0) ||
                    (err == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
                    ERR_clear_error();
                    return 0;
                }
                if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) throwErrno("connection lost (TLS read)");
                if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
                    throwSsl("connection lost (TLS read)");
                wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, what);
            } else {
                ssize_t n = ::recv(fd_.get(), buf, size, 0);
                if (n >= 0) return static_cast<size_t>(n);
                if (errno == EAGAIN) {
                    wait(POLLIN, deadline, what);
                } else if (errno != EINTR) {
                    throwErrno("connection lost (recv)");
                }
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
    SslCtx ctx_;
    Ssl ssl_;
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
}

void KubeHttpClient::interrupt() {
    interrupted_ = true;
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof one);  // stays readable: nobody reads it
}

KubeHttpClient::Result KubeHttpClient::get(const std::string& path, const OnData& onData,
                                           std::chrono::seconds idleTimeout) {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);

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
    ERR_clear_error();
    r.status = parser.headComplete() ? parser.status() : 0;
    r.complete = parser.done() && !aborted && !r.interrupted;
    if (!r.complete && r.error.empty() && !r.interrupted) r.error = "incomplete response";
    return r;
}

}  // namespace kovs::tunnel
