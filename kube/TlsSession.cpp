#include "kube/TlsSession.hpp"

#include <arpa/inet.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/Error.hpp"
#include "base/Strings.hpp"

namespace kovs::kube {
namespace {

// OpenSSL's default bundle on Debian; SSL_CERT_FILE overrides it, as for OpenSSL.
constexpr const char* kSystemCaFile = "/etc/ssl/certs/ca-certificates.crt";

std::string mbedtlsError(int rc) {
    char buf[200];
    mbedtls_strerror(rc, buf, sizeof buf);
    return buf;
}

const unsigned char* bytes(const std::string& s) { return reinterpret_cast<const unsigned char*>(s.c_str()); }

size_t chainLength(const mbedtls_x509_crt& chain) {
    size_t n = 0;
    for (const mbedtls_x509_crt* c = &chain; c && c->version != 0; c = c->next) ++n;
    return n;
}

// Appends every certificate in PEM (or DER) text to `chain`; throws when
// none could be used. Like OpenSSL's PEM reader, a certificate of a bundle
// that cannot be parsed is skipped when others can.
void addCertificates(mbedtls_x509_crt& chain, const std::string& pem, const std::string& what) {
    size_t before = chainLength(chain);
    // PEM input must be NUL-terminated and its length must count the NUL.
    int rc = mbedtls_x509_crt_parse(&chain, bytes(pem), pem.size() + 1);
    if (rc < 0 || chainLength(chain) == before)
        throw Error(what + ": no usable certificate" + (rc < 0 ? ": " + mbedtlsError(rc) : std::string()));
}

void loadKey(mbedtls_pk_context& key, const std::string& pem, const std::string& what) {
    int rc = mbedtls_pk_parse_key(&key, bytes(pem), pem.size() + 1, nullptr, 0);
    if (rc != 0) throw Error(what + ": " + mbedtlsError(rc));
}

// "line\nline\n" -> "line; line".
std::string joinLines(const char* text) {
    std::string out;
    for (std::string_view rest = text; !rest.empty();) {
        size_t nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        if (!line.empty()) out += (out.empty() ? "" : "; ") + std::string(line);
        rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    }
    return out;
}

}  // namespace

struct TlsSession::State {
    mbedtls_entropy_context entropy;
    mbedtls_ctr_drbg_context drbg;
    mbedtls_x509_crt ca;
    mbedtls_x509_crt ownCert;
    mbedtls_pk_context ownKey;
    mbedtls_ssl_config conf;
    mbedtls_ssl_context ssl;
    std::string host;
    unsigned char ip[sizeof(in6_addr)] = {};
    size_t ipLen = 0;  // host is an IP literal of this many bytes
    int fd = -1;
    int socketErrno = 0;  // of the last failed send/recv, for the message

    State() {
        mbedtls_entropy_init(&entropy);
        mbedtls_ctr_drbg_init(&drbg);
        mbedtls_x509_crt_init(&ca);
        mbedtls_x509_crt_init(&ownCert);
        mbedtls_pk_init(&ownKey);
        mbedtls_ssl_config_init(&conf);
        mbedtls_ssl_init(&ssl);
    }
    ~State() {
        mbedtls_ssl_free(&ssl);
        mbedtls_ssl_config_free(&conf);
        mbedtls_pk_free(&ownKey);
        mbedtls_x509_crt_free(&ownCert);
        mbedtls_x509_crt_free(&ca);
        mbedtls_ctr_drbg_free(&drbg);
        mbedtls_entropy_free(&entropy);
    }
    State(const State&) = delete;
    State& operator=(const State&) = delete;

    static int send(void* ctx, const unsigned char* buf, size_t len) {
        auto* s = static_cast<State*>(ctx);
        while (true) {
            ssize_t n = ::send(s->fd, buf, len, MSG_NOSIGNAL);  // no SIGPIPE from a closed peer
            if (n >= 0) return static_cast<int>(n);
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return MBEDTLS_ERR_SSL_WANT_WRITE;
            s->socketErrno = errno;
            return errno == EPIPE || errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_SEND_FAILED;
        }
    }
    static int recv(void* ctx, unsigned char* buf, size_t len) {
        auto* s = static_cast<State*>(ctx);
        while (true) {
            ssize_t n = ::recv(s->fd, buf, len, 0);
            if (n >= 0) return static_cast<int>(n);
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return MBEDTLS_ERR_SSL_WANT_READ;
            s->socketErrno = errno;
            return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
        }
    }
    // mbed TLS 2.28 matches the expected name only against DNS names and the
    // CN; an API server reached by IP (10.96.0.1 in-cluster, 127.0.0.1 from
    // kind's kubeconfig) is checked here against the iPAddress names.
    static int verifyIp(void* ctx, mbedtls_x509_crt* crt, int depth, uint32_t* flags) {
        if (depth != 0) return 0;
        auto* s = static_cast<const State*>(ctx);
        constexpr int kIpTag = MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_X509_SAN_IP_ADDRESS;
        for (const mbedtls_x509_sequence* n = &crt->subject_alt_names; n && n->buf.p; n = n->next) {
            if (n->buf.tag == kIpTag && n->buf.len == s->ipLen && std::memcmp(n->buf.p, s->ip, s->ipLen) == 0) return 0;
        }
        *flags |= MBEDTLS_X509_BADCERT_CN_MISMATCH;
        return 0;
    }

    // The handshake failed: why, in words.
    std::string failure(int rc) const {
        uint32_t flags = mbedtls_ssl_get_verify_result(&ssl);
        if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags != 0 && flags != uint32_t(-1)) {
            std::string why;
            if (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH) {
                why = "not issued for " + host;
                flags &= ~uint32_t(MBEDTLS_X509_BADCERT_CN_MISMATCH);
            }
            if (flags != 0) {
                char buf[1024];
                mbedtls_x509_crt_verify_info(buf, sizeof buf, "", flags);
                why += (why.empty() ? "" : "; ") + joinLines(buf);
            }
            return "TLS: server certificate: " + why;
        }
        return "TLS handshake: " + mbedtlsError(rc) + socketError();
    }
    std::string socketError() const {
        return socketErrno != 0 ? std::string(" (") + std::strerror(socketErrno) + ")" : std::string();
    }
};

TlsSession::TlsSession(const KubeCredentials& c, const std::string& host, int fd) : s_(std::make_unique<State>()) {
    State& s = *s_;
    s.host = host;
    s.fd = fd;
    if (inet_pton(AF_INET, host.c_str(), s.ip) == 1) {
        s.ipLen = 4;
    } else if (inet_pton(AF_INET6, host.c_str(), s.ip) == 1) {
        s.ipLen = 16;
    }
    static const char kPersonalization[] = "kovs-agent";
    if (int rc = mbedtls_ctr_drbg_seed(&s.drbg, mbedtls_entropy_func, &s.entropy,
                                       reinterpret_cast<const unsigned char*>(kPersonalization), sizeof kPersonalization);
        rc != 0)
        throw Error("TLS: seeding the random generator: " + mbedtlsError(rc));
    if (int rc = mbedtls_ssl_config_defaults(&s.conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                             MBEDTLS_SSL_PRESET_DEFAULT);
        rc != 0)
        throw Error("TLS: configuration: " + mbedtlsError(rc));
    mbedtls_ssl_conf_min_version(&s.conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);  // TLS 1.2
    mbedtls_ssl_conf_rng(&s.conf, mbedtls_ctr_drbg_random, &s.drbg);

    if (c.insecureSkipTlsVerify) {
        mbedtls_ssl_conf_authmode(&s.conf, MBEDTLS_SSL_VERIFY_NONE);
    } else {
        mbedtls_ssl_conf_authmode(&s.conf, MBEDTLS_SSL_VERIFY_REQUIRED);
        if (!c.caData.empty()) addCertificates(s.ca, c.caData, "certificate-authority-data");
        if (!c.caFile.empty()) addCertificates(s.ca, readFile(c.caFile, "CA file"), "CA file " + c.caFile);
        if (c.caData.empty() && c.caFile.empty()) {
            const char* env = std::getenv("SSL_CERT_FILE");
            std::string file = env && *env ? env : kSystemCaFile;
            addCertificates(s.ca, readFile(file, "system CA store"), "system CA store " + file);
        }
        mbedtls_ssl_conf_ca_chain(&s.conf, &s.ca, nullptr);
        if (s.ipLen != 0) mbedtls_ssl_conf_verify(&s.conf, State::verifyIp, &s);
    }

    if (!c.clientCertData.empty()) addCertificates(s.ownCert, c.clientCertData, "client-certificate-data");
    if (!c.clientCertFile.empty())
        addCertificates(s.ownCert, readFile(c.clientCertFile, "client certificate"),
                        "client certificate " + c.clientCertFile);
    if (!c.clientKeyData.empty()) loadKey(s.ownKey, c.clientKeyData, "client-key-data");
    if (!c.clientKeyFile.empty())
        loadKey(s.ownKey, readFile(c.clientKeyFile, "client key"), "client key " + c.clientKeyFile);
    if (chainLength(s.ownCert) != 0) {
        if (mbedtls_pk_get_type(&s.ownKey) == MBEDTLS_PK_NONE) throw Error("client certificate: no client key given");
        if (mbedtls_pk_check_pair(&s.ownCert.pk, &s.ownKey) != 0)
            throw Error("client certificate and key do not match");
        if (int rc = mbedtls_ssl_conf_own_cert(&s.conf, &s.ownCert, &s.ownKey); rc != 0)
            throw Error("client certificate: " + mbedtlsError(rc));
    }

    if (int rc = mbedtls_ssl_setup(&s.ssl, &s.conf); rc != 0) throw Error("TLS: session setup: " + mbedtlsError(rc));
    // A DNS name is sent as SNI (RFC 6066 has no SNI for IP literals) and
    // checked against the certificate by mbed TLS; NULL says "no name check
    // by mbed TLS" explicitly, which newer releases require to skip it.
    if (int rc = mbedtls_ssl_set_hostname(&s.ssl, s.ipLen != 0 ? nullptr : host.c_str()); rc != 0)
        throw Error("TLS: server name " + host + ": " + mbedtlsError(rc));
    mbedtls_ssl_set_bio(&s.ssl, &s, State::send, State::recv, nullptr);
}

TlsSession::~TlsSession() = default;

TlsSession::Want TlsSession::handshake() {
    int rc = mbedtls_ssl_handshake(&s_->ssl);
    if (rc == 0) return Want::Nothing;
    if (rc == MBEDTLS_ERR_SSL_WANT_READ) return Want::Read;
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) return Want::Write;
    throw Error(s_->failure(rc));
}

TlsSession::Want TlsSession::write(std::string_view& data) {
    int rc = mbedtls_ssl_write(&s_->ssl, reinterpret_cast<const unsigned char*>(data.data()), data.size());
    if (rc >= 0) {
        data.remove_prefix(static_cast<size_t>(rc));
        return Want::Nothing;
    }
    if (rc == MBEDTLS_ERR_SSL_WANT_READ) return Want::Read;
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) return Want::Write;
    throw Error("TLS write: " + mbedtlsError(rc) + s_->socketError());
}

TlsSession::Want TlsSession::read(char* buf, size_t size, size_t& got) {
    got = 0;
    int rc = mbedtls_ssl_read(&s_->ssl, reinterpret_cast<unsigned char*>(buf), size);
    if (rc > 0) {
        got = static_cast<size_t>(rc);
        return Want::Nothing;
    }
    // A server that closes without close_notify ends the stream just as well.
    if (rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || rc == MBEDTLS_ERR_SSL_CONN_EOF) return Want::Nothing;
    if (rc == MBEDTLS_ERR_SSL_WANT_READ) return Want::Read;
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) return Want::Write;
    if (rc == MBEDTLS_ERR_NET_CONN_RESET && s_->socketErrno != 0)
        throw SystemError("connection lost (TLS read)", s_->socketErrno);
    throw Error("connection lost (TLS read): " + mbedtlsError(rc) + s_->socketError());
}

}  // namespace kovs::kube
