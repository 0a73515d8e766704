#pragma once
// Blocking HTTP/1.1 GETs against the Kubernetes API server, over TLS
// (mbed TLS, TlsSession) or plain TCP, meant to run on a worker thread. The socket is
// non-blocking and every wait polls it together with an eventfd, so
// interrupt() from another thread wakes a transfer at once.
//
// Not libcurl: libcurl's Debian build loads GnuTLS, Kerberos, LDAP, libssh2
// and more, whose load-time initialisation alone is a third of the agent's
// memory target (docs/benchmarks.md). What the agent needs is one GET with a
// bearer token or a client certificate and a streamed body.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "base/UniqueFd.hpp"
#include "kube/KubeConfig.hpp"

namespace kovs::kube {

class KubeHttpClient {
public:
    struct Result {
        long status = 0;        // HTTP status, 0 when no response arrived
        bool complete = false;  // the body ended cleanly (not cut off, not aborted)
        bool interrupted = false;
        std::string error;      // what went wrong when !complete
    };
    // Body bytes with the response's HTTP status; return false to abort the transfer.
    using OnData = std::function<bool(long status, std::string_view data)>;

    // Throws kovs::Error when creds.server is not an http(s)://host[:port] URL.
    explicit KubeHttpClient(KubeCredentials creds);
    KubeHttpClient(const KubeHttpClient&) = delete;
    KubeHttpClient& operator=(const KubeHttpClient&) = delete;

    // GET server+path. `idleTimeout`: abort when nothing arrives for that long
    // (a dead TCP connection to the API server would otherwise hang a watch).
    Result get(const std::string& path, const OnData& onData, std::chrono::seconds idleTimeout);

    // Thread-safe; the running and every later get() return with interrupted=true.
    void interrupt();

    const std::string& server() const { return creds_.server; }

    struct Url {
        bool tls = true;
        std::string host;  // without IPv6 brackets
        std::string port;
        std::string basePath;  // "" or "/prefix", prepended to every path
    };
    static Url parseUrl(const std::string& server);  // throws kovs::Error

private:
    KubeCredentials creds_;
    Url url_;
    UniqueFd wake_;  // eventfd, readable once interrupt() was called
    std::atomic<bool> interrupted_{false};
};

}  // namespace kovs::kube
