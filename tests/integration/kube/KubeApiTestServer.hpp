#pragma once
// The one mock kovs allows: a local HTTPS server on 127.0.0.1 that speaks the
// Kubernetes API's list/watch shapes for one resource path (a List JSON, a
// chunked watch stream of one JSON event per line), so kube::ListWatch and
// KubernetesPeerSource can be tested without an API server. The test scripts
// the watch stream line by line and can cut it off abruptly. Left out: every
// other path, label and field selectors (recorded, not applied), pagination.
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT  // cpp-httplib.pc sets it; must match the shared library
#endif
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kovs::test {

// What TestCert makes: the key type, the names, how the key is written.
struct CertSpec {
    enum class Key { EcP256, Rsa2048 };
    Key key = Key::EcP256;
    std::string commonName = "127.0.0.1";
    std::string subjectAltName = "IP:127.0.0.1";  // "" for none
    // PKCS#1 / SEC1 PEM ("BEGIN RSA PRIVATE KEY", as kubeadm writes kind's
    // keys) instead of OpenSSL 3's default PKCS#8 ("BEGIN PRIVATE KEY").
    bool traditionalKey = false;
};

// A certificate and its key made with the openssl binary, in a temp dir
// removed on destruction: self-signed (a CA of its own), or issued by another
// TestCert as kubeadm issues the API server's and the users' certificates.
class TestCert {
public:
    explicit TestCert(const CertSpec& spec = {}, const TestCert* issuer = nullptr);
    ~TestCert();
    TestCert(const TestCert&) = delete;
    TestCert& operator=(const TestCert&) = delete;
    std::string certFile() const { return dir_ + "/cert.pem"; }
    std::string keyFile() const { return dir_ + "/key.pem"; }
    std::string certPem() const;
    std::string keyPem() const;
    const std::string& dir() const { return dir_; }

private:
    std::string dir_;
};
// The server certificate of most tests: EC P-256, self-signed for 127.0.0.1.
using SelfSignedCert = TestCert;

class KubeApiTestServer {
public:
    // With `clientCa`, the TLS handshake requires a client certificate issued
    // by it, and such a certificate authenticates a request without a token.
    KubeApiTestServer(const TestCert& cert, std::string token, const TestCert* clientCa = nullptr,
                      const std::string& resourcePath = "/api/v1/nodes");
    ~KubeApiTestServer();

    int port() const { return port_; }
    std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

    // What a list returns from now on.
    void setList(const nlohmann::json& items, const std::string& resourceVersion, const std::string& kind);
    void setNodes(const nlohmann::json& items, const std::string& resourceVersion) {
        setList(items, resourceVersion, "NodeList");
    }
    // From now on every watch gets the real server's ERROR 410 Gone event at
    // once (a server whose resourceVersions expire as soon as they are given).
    void expireEveryWatch(bool on);
    // Raw bytes for the current (or next) watch stream; a line needs its '\n'.
    void sendWatch(const std::string& raw);
    void sendEvent(const std::string& type, const nlohmann::json& object) {
        sendWatch(nlohmann::json{{"type", type}, {"object", object}}.dump() + "\n");
    }
    // Cuts the current watch stream off without the terminating chunk.
    void abortWatch();
    // false: the path answers 404 NotFound as for a CRD not installed (lists
    // and new watches; an open watch stream ends), true (the default) again.
    void setServed(bool served);

    int lists() const;
    // When each list was served, and its query parameters.
    std::vector<std::chrono::steady_clock::time_point> listTimes() const;
    std::map<std::string, std::string> listParams(size_t n) const;
    int watches() const;
    int unauthorized() const;
    // Query parameters of the n-th watch request (0-based).
    std::map<std::string, std::string> watchParams(size_t n) const;

    // What the TLS layer saw of the latest request.
    struct TlsSeen {
        std::string version;        // "TLSv1.2"
        std::string serverName;     // SNI, "" when none was sent
        std::string clientSubject;  // "/CN=..." of a verified client certificate, else ""
    };
    TlsSeen lastTls() const;

private:
    bool authorized(const httplib::Request& req, const TlsSeen& tls, httplib::Response& res);
    static void notFound(httplib::Response& res);
    TlsSeen noteTls(const httplib::Request& req);

    std::string token_;
    httplib::SSLServer server_;
    int port_ = 0;
    std::thread thread_;

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::string listBody_;
    std::deque<std::string> watchQueue_;  // "" = abort marker
    std::vector<std::map<std::string, std::string>> watchParams_;
    std::vector<std::map<std::string, std::string>> listParams_;
    std::vector<std::chrono::steady_clock::time_point> listTimes_;
    bool expireEveryWatch_ = false;
    bool notServed_ = false;
    int unauthorized_ = 0;
    TlsSeen lastTls_;
    bool stopping_ = false;
};

}  // namespace kovs::test
