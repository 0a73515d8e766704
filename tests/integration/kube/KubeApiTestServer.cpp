#include "tests/integration/kube/KubeApiTestServer.hpp"

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "base/Error.hpp"
#include "base/Process.hpp"

namespace kovs::test {

using namespace std::chrono_literals;

namespace {
std::string readAll(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}
}  // namespace

TestCert::TestCert(const CertSpec& spec, const TestCert* issuer) {
    char tmpl[] = "/tmp/kovs-cert-XXXXXX";
    if (!::mkdtemp(tmpl)) throwErrno("mkdtemp");
    dir_ = tmpl;
    std::vector<std::string> req = {"openssl", "req", "-newkey"};
    if (spec.key == CertSpec::Key::Rsa2048) {
        req.insert(req.end(), {"rsa:2048"});
    } else {
        req.insert(req.end(), {"ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"});
    }
    req.insert(req.end(), {"-nodes", "-keyout", keyFile(), "-subj", "/CN=" + spec.commonName});
    if (!spec.subjectAltName.empty()) req.insert(req.end(), {"-addext", "subjectAltName=" + spec.subjectAltName});
    if (!issuer) {
        req.insert(req.end(), {"-x509", "-days", "1", "-out", certFile()});
        runChecked(req);
    } else {
        // A leaf, as kubeadm's: not a CA, the names of the request copied over.
        std::string csr = dir_ + "/req.csr";
        req.insert(req.end(), {"-addext", "basicConstraints=critical,CA:FALSE", "-out", csr});
        runChecked(req);
        runChecked({"openssl", "x509", "-req", "-in", csr, "-CA", issuer->certFile(), "-CAkey", issuer->keyFile(),
                    "-set_serial", std::to_string(std::random_device{}() | 1u), "-days", "1", "-copy_extensions",
                    "copy", "-out", certFile()});
    }
    if (spec.traditionalKey) {
        runChecked({"openssl", "pkey", "-in", keyFile(), "-traditional", "-out", dir_ + "/key.traditional"});
        std::filesystem::rename(dir_ + "/key.traditional", keyFile());
    }
}

TestCert::~TestCert() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

std::string TestCert::certPem() const { return readAll(certFile()); }
std::string TestCert::keyPem() const { return readAll(keyFile()); }

KubeApiTestServer::KubeApiTestServer(const TestCert& cert, std::string token, const TestCert* clientCa,
                                     const std::string& resourcePath)
    : token_(std::move(token)),
      server_(cert.certFile().c_str(), cert.keyFile().c_str(), clientCa ? clientCa->certFile().c_str() : nullptr) {
    if (!server_.is_valid()) throw Error("test API server: cannot load certificate " + cert.certFile());
    server_.Get(resourcePath, [this](const httplib::Request& req, httplib::Response& res) {
        if (!authorized(req, noteTls(req), res)) return;
        if (req.get_param_value("watch") != "true") {
            std::lock_guard lock(mutex_);
            listTimes_.push_back(std::chrono::steady_clock::now());
            listParams_.emplace_back(req.params.begin(), req.params.end());
            if (notServed_) return notFound(res);
            res.set_content(listBody_, "application/json");
            return;
        }
        {
            std::lock_guard lock(mutex_);
            if (notServed_) return notFound(res);
        }
        size_t id;
        {
            std::lock_guard lock(mutex_);
            watchParams_.emplace_back(req.params.begin(), req.params.end());
            id = watchParams_.size();
            if (expireEveryWatch_) {
                res.set_content(R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},)"
                                R"("status":"Failure","message":"too old resource version","reason":"Expired","code":410}})"
                                "\n",
                                "application/json");
                return;
            }
        }
        cv_.notify_all();
        res.set_chunked_content_provider("application/json", [this, id](size_t, httplib::DataSink& sink) {
            std::unique_lock lock(mutex_);
            // Blocks (briefly) for the next scripted chunk; httplib calls us again while we return true.
            cv_.wait_for(lock, 50ms, [this] { return stopping_ || !watchQueue_.empty(); });
            // Only the newest watch reads the script: a stream the client has
            // already dropped may not notice for a while and must not eat it.
            if (stopping_ || notServed_ || id != watchParams_.size()) return false;
            if (watchQueue_.empty()) return sink.is_writable();
            std::string chunk = std::move(watchQueue_.front());
            watchQueue_.pop_front();
            lock.unlock();
            if (chunk.empty()) return false;  // abrupt close: no terminating chunk
            return sink.write(chunk.data(), chunk.size());
        });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw Error("test API server: cannot bind 127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
}

// What the API server answers for a resource no CRD defines (yet).
void KubeApiTestServer::notFound(httplib::Response& res) {
    res.status = 404;
    res.set_content(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                    R"("message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404})",
                    "application/json");
}

void KubeApiTestServer::setServed(bool served) {
    {
        std::lock_guard lock(mutex_);
        notServed_ = !served;
    }
    cv_.notify_all();
}

KubeApiTestServer::~KubeApiTestServer() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
}

KubeApiTestServer::TlsSeen KubeApiTestServer::noteTls(const httplib::Request& req) {
    TlsSeen seen;
    if (req.ssl) {
        seen.version = SSL_get_version(req.ssl);
        const char* sni = SSL_get_servername(req.ssl, TLSEXT_NAMETYPE_host_name);
        seen.serverName = sni ? sni : "";
        if (X509* peer = SSL_get0_peer_certificate(req.ssl); peer && SSL_get_verify_result(req.ssl) == X509_V_OK) {
            char name[256];
            X509_NAME_oneline(X509_get_subject_name(peer), name, sizeof name);
            seen.clientSubject = name;
        }
    }
    std::lock_guard lock(mutex_);
    lastTls_ = seen;
    return seen;
}

KubeApiTestServer::TlsSeen KubeApiTestServer::lastTls() const {
    std::lock_guard lock(mutex_);
    return lastTls_;
}

bool KubeApiTestServer::authorized(const httplib::Request& req, const TlsSeen& tls, httplib::Response& res) {
    if (req.get_header_value("Authorization") == "Bearer " + token_) return true;
    if (!tls.clientSubject.empty()) return true;  // verified against clientCa by the handshake
    std::lock_guard lock(mutex_);
    ++unauthorized_;
    res.status = 401;
    res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","code":401})",
                    "application/json");
    return false;
}

void KubeApiTestServer::expireEveryWatch(bool on) {
    std::lock_guard lock(mutex_);
    expireEveryWatch_ = on;
}

void KubeApiTestServer::setList(const nlohmann::json& items, const std::string& resourceVersion, const std::string& kind) {
    nlohmann::json list = {{"kind", kind},
                           {"apiVersion", "v1"},
                           {"metadata", {{"resourceVersion", resourceVersion}}},
                           {"items", items}};
    std::lock_guard lock(mutex_);
    listBody_ = list.dump();
}

void KubeApiTestServer::sendWatch(const std::string& raw) {
    {
        std::lock_guard lock(mutex_);
        watchQueue_.push_back(raw);
    }
    cv_.notify_all();
}

void KubeApiTestServer::abortWatch() { sendWatch(""); }

int KubeApiTestServer::lists() const {
    std::lock_guard lock(mutex_);
    return static_cast<int>(listTimes_.size());
}

std::vector<std::chrono::steady_clock::time_point> KubeApiTestServer::listTimes() const {
    std::lock_guard lock(mutex_);
    return listTimes_;
}

std::map<std::string, std::string> KubeApiTestServer::listParams(size_t n) const {
    std::lock_guard lock(mutex_);
    return n < listParams_.size() ? listParams_[n] : std::map<std::string, std::string>{};
}

int KubeApiTestServer::watches() const {
    std::lock_guard lock(mutex_);
    return static_cast<int>(watchParams_.size());
}

int KubeApiTestServer::unauthorized() const {
    std::lock_guard lock(mutex_);
    return unauthorized_;
}

std::map<std::string, std::string> KubeApiTestServer::watchParams(size_t n) const {
    std::lock_guard lock(mutex_);
    return n < watchParams_.size() ? watchParams_[n] : std::map<std::string, std::string>{};
}

}  // namespace kovs::test
