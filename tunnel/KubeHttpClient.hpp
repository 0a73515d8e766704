#pragma once
// Blocking HTTPS GETs against the Kubernetes API server (libcurl), meant to
// run on a worker thread. A transfer runs on a curl multi handle so that
// interrupt() from another thread wakes it at once (curl_multi_wakeup)
// instead of waiting for curl's next progress tick.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tunnel/KubeConfig.hpp"

namespace kovs::tunnel {

class KubeHttpClient {
public:
    struct Result {
        long status = 0;        // HTTP status, 0 when no response arrived
        bool complete = false;  // the body ended cleanly (not cut off, not aborted)
        bool interrupted = false;
        std::string error;      // curl's description when !complete
    };
    // Body bytes with the response's HTTP status; return false to abort the transfer.
    using OnData = std::function<bool(long status, std::string_view data)>;

    explicit KubeHttpClient(KubeCredentials creds);
    ~KubeHttpClient();
    KubeHttpClient(const KubeHttpClient&) = delete;
    KubeHttpClient& operator=(const KubeHttpClient&) = delete;

    // GET server+path. `idleTimeout`: abort when nothing arrives for that long
    // (a dead TCP connection to the API server would otherwise hang a watch).
    Result get(const std::string& path, const OnData& onData, std::chrono::seconds idleTimeout);

    // Thread-safe; the running and every later get() return with interrupted=true.
    void interrupt();

    const std::string& server() const { return creds_.server; }

private:
    struct Multi;
    KubeCredentials creds_;
    std::unique_ptr<Multi> multi_;
    std::atomic<bool> interrupted_{false};
};

}  // namespace kovs::tunnel
