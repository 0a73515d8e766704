#pragma once
// Peers from the Kubernetes API: list /api/v1/nodes, then watch from the
// list's resourceVersion with bookmarks.
//
// Threading: KubeHttpClient runs blocking on one worker thread owned by this
// class (simpler to reason about than a non-blocking client on the EventLoop,
// and a slow API server can never stall the agent's loop). The worker keeps the
// peer map; each time it changes, a copy is post()ed to the EventLoop, so the
// callback runs on the loop thread like every other reconciler input.
//
// Failure handling: ERROR 410 Gone (or HTTP 410) -> relist at once;
// disconnect / transport error -> re-watch from the last resourceVersion
// after an exponential backoff; garbage or a truncated line -> logged, the
// connection is dropped and the source relists after the backoff. The last
// good peer set stays in force throughout (nothing is reported until the
// next successful list or event).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/EventLoop.hpp"
#include "peers/kube/KubeConfig.hpp"
#include "peers/kube/KubeHttpClient.hpp"
#include "peers/PeerSource.hpp"

namespace kovs::peers {

struct KubernetesPeerSourceOptions {
    std::string nodeName;  // our own Node: left out of the peer set
    std::chrono::milliseconds backoffInitial{500};
    std::chrono::milliseconds backoffMax{30000};
    int watchTimeoutSeconds = 300;  // asked of the server; it closes the watch cleanly then
    // What a broken server or proxy may make the agent hold: a NodeList
    // (5,000 kind-shaped Nodes are about 25 MiB), one watch event. Larger is
    // refused as garbage. Error bodies are kept only for their first 64 KiB.
    size_t maxListBytes = 256u << 20;
    size_t maxEventBytes = 16u << 20;
};

class KubernetesPeerSource : public PeerSource {
public:
    KubernetesPeerSource(EventLoop& loop, KubeCredentials creds, KubernetesPeerSourceOptions opts);
    ~KubernetesPeerSource() override;

    void start(Callback onPeers) override;
    void stop() override;

    // Failed lists/watches so far (thread-safe); for status and tests.
    size_t failures() const { return failures_; }

private:
    enum class WatchEnd { Closed, Gone, Broken, Garbage, Stopped };

    void run();
    bool list();
    WatchEnd watch();
    bool applyLine(const std::string& line, WatchEnd& end);
    void publish();
    bool sleep(std::chrono::milliseconds d);  // false when stopping

    EventLoop& loop_;
    KubernetesPeerSourceOptions opts_;
    KubeHttpClient http_;
    // Shared with posted tasks: lets stop() silence callbacks already queued
    // on the loop.
    struct Delivery {
        Callback onPeers;
        bool active = true;
    };
    std::shared_ptr<Delivery> delivery_;

    // Worker-thread state.
    PeerSet peers_;
    std::optional<PeerSet> published_;
    std::string resourceVersion_;
    bool watchProgressed_ = false;  // the last watch delivered at least one good event

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::atomic<size_t> failures_{0};
    std::thread worker_;
};

}  // namespace kovs::peers
