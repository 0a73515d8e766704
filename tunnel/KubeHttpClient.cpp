#include "tunnel/KubeHttpClient.hpp"

#include <curl/curl.h>

#include <mutex>

#include "base/Error.hpp"

namespace kovs::tunnel {
namespace {

struct EasyDeleter { void operator()(CURL* e) const { curl_easy_cleanup(e); } };
struct SlistDeleter { void operator()(curl_slist* l) const { curl_slist_free_all(l); } };
using Easy = std::unique_ptr<CURL, EasyDeleter>;
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

void globalInit() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
    CURL* easy;
    const KubeHttpClient::OnData* onData;
    bool aborted = false;
};

size_t writeCallback(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    if (!(*t->onData)(status, std::string_view(data, size * n))) {
        t->aborted = true;
        return 0;  // makes curl fail the transfer with CURLE_WRITE_ERROR
    }
    return size * n;
}

void setBlob(CURL* e, CURLoption opt, const std::string& data) {
    curl_blob blob{const_cast<char*>(data.data()), data.size(), CURL_BLOB_COPY};
    curl_easy_setopt(e, opt, &blob);
}

}  // namespace

struct KubeHttpClient::Multi {
    CURLM* m = curl_multi_init();
    ~Multi() { curl_multi_cleanup(m); }
};

KubeHttpClient::KubeHttpClient(KubeCredentials creds) : creds_(std::move(creds)) {
    globalInit();
    multi_ = std::make_unique<Multi>();
    if (!multi_->m) throw Error("curl_multi_init: failed");
}

KubeHttpClient::~KubeHttpClient() = default;

void KubeHttpClient::interrupt() {
    interrupted_ = true;
    curl_multi_wakeup(multi_->m);
}

KubeHttpClient::Result KubeHttpClient::get(const std::string& path, const OnData& onData,
                                           std::chrono::seconds idleTimeout) {
    Result r;
    if (interrupted_) {
        r.interrupted = true;
        return r;
    }
    Easy easy(curl_easy_init());
    if (!easy) throw Error("curl_easy_init: failed");
    CURL* e = easy.get();
    std::string url = creds_.server + path;
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(idleTimeout.count()));
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
    Slist headers(curl_slist_append(nullptr, "Accept: application/json"));
    std::string token = creds_.bearerToken();
    if (!token.empty()) {
        std::string auth = "Authorization: Bearer " + token;
        headers.reset(curl_slist_append(headers.release(), auth.c_str()));
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.get());
    if (!creds_.caData.empty()) setBlob(e, CURLOPT_CAINFO_BLOB, creds_.caData);
    if (!creds_.caFile.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, creds_.caFile.c_str());
    if (!creds_.clientCertData.empty()) setBlob(e, CURLOPT_SSLCERT_BLOB, creds_.clientCertData);
    if (!creds_.clientCertFile.empty()) curl_easy_setopt(e, CURLOPT_SSLCERT, creds_.clientCertFile.c_str());
    if (!creds_.clientKeyData.empty()) setBlob(e, CURLOPT_SSLKEY_BLOB, creds_.clientKeyData);
    if (!creds_.clientKeyFile.empty()) curl_easy_setopt(e, CURLOPT_SSLKEY, creds_.clientKeyFile.c_str());
    if (creds_.insecureSkipTlsVerify) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    Transfer t{e, &onData};
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, writeCallback);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);

    CURLM* m = multi_->m;
    curl_multi_add_handle(m, e);
    CURLcode code = CURLE_OK;
    bool done = false;
    while (!done) {
        int running = 0;
        CURLMcode mc = curl_multi_perform(m, &running);
        if (mc != CURLM_OK) {
            curl_multi_remove_handle(m, e);
            throw Error("GET " + url + ": curl_multi_perform: " + curl_multi_strerror(mc));
        }
        int queued = 0;
        while (CURLMsg* msg = curl_multi_info_read(m, &queued)) {
            if (msg->msg == CURLMSG_DONE) {
                code = msg->data.result;
                done = true;
            }
        }
        if (done) break;
        if (interrupted_) {
            r.interrupted = true;
            break;
        }
        curl_multi_poll(m, nullptr, 0, 1000, nullptr);
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
    curl_multi_remove_handle(m, e);
    r.complete = done && code == CURLE_OK;
    if (!r.complete && !r.interrupted) {
        r.error = t.aborted ? "aborted by the client" : (errbuf[0] ? errbuf : curl_easy_strerror(code));
    }
    return r;
}

}  // namespace kovs::tunnel
