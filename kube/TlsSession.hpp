#pragma once
// One TLS 1.2 client session (mbed TLS) over a connected non-blocking socket,
// for KubeHttpClient. It never waits: each step says which readiness of the
// socket it needs before it can go on, and the caller polls (together with
// its interrupt eventfd and deadline).
//
// mbed TLS rather than OpenSSL for memory: an agent that did one OpenSSL
// handshake keeps ~4.4 MiB of libcrypto/libssl pages resident, mbed TLS
// ~0.8 MiB (docs/benchmarks.md, "Agent footprint at idle").
//
// Trust and identity as kubectl does: the kubeconfig's or service account's
// CA (the system store when there is none), the server's name checked against
// the certificate (DNS names by mbed TLS, IP literals here: mbed TLS 2.28 only
// matches DNS names), SNI for DNS names, an optional client certificate.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "kube/KubeConfig.hpp"

namespace kovs::kube {

class TlsSession {
public:
    // What the socket must be ready for before the same call is made again.
    enum class Want { Nothing, Read, Write };

    // Loads the CA, client certificate and key of `creds` (files are read
    // now, so a rotated file is picked up by the next session). Throws
    // kovs::Error naming the item that cannot be used.
    TlsSession(const KubeCredentials& creds, const std::string& host, int fd);
    ~TlsSession();
    TlsSession(const TlsSession&) = delete;
    TlsSession& operator=(const TlsSession&) = delete;

    // Nothing once the handshake is done; throws kovs::Error when it failed
    // ("TLS: server certificate: ..." when the server is not trusted).
    Want handshake();
    // Sends a prefix of `data` and removes it from `data`.
    Want write(std::string_view& data);
    // Nothing with `got` bytes read; got == 0 when the server ended the
    // stream (close_notify, or a close without it: whether the body was
    // complete is the HTTP parser's call). Throws on a reset or a bad record.
    Want read(char* buf, size_t size, size_t& got);

private:
    struct State;
    std::unique_ptr<State> s_;
};

}  // namespace kovs::kube
