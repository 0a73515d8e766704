#pragma once
// The one mock kovs allows: a local HTTPS server on 127.0.0.1 that speaks the
// Kubernetes API's Node list/watch shapes (NodeList JSON, a chunked watch
// stream of one JSON event per line), so KubernetesPeerSource can be tested
// without an API server. The test scripts the watch stream line by line and
// can cut it off abruptly.
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT  // cpp-httplib.pc sets it; must match the shared library
#endif
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kovs::test {

// A self-signed certificate for 127.0.0.1 made with the openssl binary, in a
// temp dir removed on destruction.
class SelfSignedCert {
public:
    SelfSignedCert();
    ~SelfSignedCert();
    std::string certFile() const { return dir_ + "/cert.pem"; }
    std::string keyFile() const { return dir_ + "/key.pem"; }
    std::string certPem() const;
    const std::string& dir() const { return dir_; }

private:
    std::string dir_;
};

class KubeApiTestServer {
public:
    KubeApiTestServer(const SelfSignedCert& cert, std::string token);
    ~KubeApiTestServer();

    std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

    // What GET /api/v1/nodes returns from now on.
    void setNodes(const nlohmann::json& items, const std::string& resourceVersion);
    // Raw bytes for the current (or next) watch stream; a line needs its '\n'.
    void sendWatch(const std::string& raw);
    void sendEvent(const std::string& type, const nlohmann::json& object) {
        sendWatch(nlohmann::json{{"type", type}, {"object", object}}.dump() + "\n");
    }
    // Cuts the current watch stream off without the terminating chunk.
    void abortWatch();

    int lists() const;
    int watches() const;
    int unauthorized() const;
    // Query parameters of the n-th watch request (0-based).
    std::map<std::string, std::string> watchParams(size_t n) const;

private:
    bool authorized(const httplib::Request& req, httplib::Response& res);

    std::string token_;
    httplib::SSLServer server_;
    int port_ = 0;
    std::thread thread_;

    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::string listBody_;
    std::deque<std::string> watchQueue_;  // "" = abort marker
    std::vector<std::map<std::string, std::string>> watchParams_;
    int lists_ = 0;
    int unauthorized_ = 0;
    bool stopping_ = false;
};

}  // namespace kovs::test
