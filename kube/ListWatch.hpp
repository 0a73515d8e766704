#pragma once
// List and watch one Kubernetes resource, the way client-go's reflector
// does: GET the list, then watch from its resourceVersion with bookmarks;
// 410 Gone (HTTP or an ERROR event) -> list again; a broken or garbled stream
// -> watch again (or list again) after a backoff. Every object is handed to
// an ObjectStore one by one, so an object that does not decode is skipped
// (logged with its name, counted) and never the whole list or the watch.
//
// Threading: KubeHttpClient runs blocking on one worker thread owned by this
// class; a slow or half-dead API server can never stall the agent's loop, and
// the watch parser is plain sequential code. The store is called on that
// thread only. Informer<T> (Informer.hpp) is the typed store most callers want.
//
// One backoff for every failure: doubled after each failed list, broken,
// garbled or immediately closed watch and after each 410, reset only by a
// watch that delivered an event. So a server that answers every watch with
// 410 is listed at most once per backoff step, never in a tight loop.
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/KubeConfig.hpp"
#include "kube/KubeHttpClient.hpp"

namespace kovs::kube {

struct ListWatchOptions {
    std::string resource;  // "nodes", "pods", "networkpolicies": logs and metrics
    // "/api/v1/nodes", "/api/v1/namespaces/NS/pods", "/apis/networking.k8s.io/v1/networkpolicies"
    std::string path;
    std::string labelSelector;  // "app=x,tier!=db" (sent URL-encoded)
    std::string fieldSelector;  // "spec.nodeName=kind-worker"
    // A resource a CRD adds (AdminNetworkPolicy): a list answered 404 means
    // it is not installed, which is no failure: the store is published empty
    // (so it counts as listed), and the list is tried again every
    // backoffMax until the CRD appears.
    bool optional = false;
    // The object members the decoder reads, at any depth. Everything else is
    // dropped while parsing, with all it holds: a kind-shaped Node is ~5 KiB
    // of JSON and a Pod with managedFields more, and their full DOMs several
    // times that (docs/benchmarks.md, "Agent footprint"). The envelope's own
    // members (kind, metadata, name, namespace, resourceVersion, items, type,
    // object, code, message) are always kept. "labels.*" keeps the member
    // `labels` with everything it holds (keys no list can name in advance).
    std::vector<std::string> fields;
    std::chrono::milliseconds backoffInitial{500};
    std::chrono::milliseconds backoffMax{30000};
    int watchTimeoutSeconds = 300;  // asked of the server; it closes the watch cleanly then
    // What a broken server or proxy may make the agent hold: a list (5,000
    // kind-shaped Nodes are about 25 MiB), one watch event. Larger is refused
    // as garbage.
    size_t maxListBytes = 256u << 20;
    size_t maxEventBytes = 16u << 20;
};

// Where ListWatch puts what it reads. Called on the worker thread only.
class ObjectStore {
public:
    virtual ~ObjectStore() = default;
    // A list is about to replace everything (it parsed as a whole).
    virtual void clear() = 0;
    // Decode `object` and keep it under `key` ("name" or "namespace/name").
    // Throw kovs::Error when it does not decode: ListWatch then logs and
    // counts it and calls reject(), so the store holds what a fresh list
    // would give.
    virtual void upsert(const std::string& key, const nlohmann::json& object) = 0;
    virtual void reject(const std::string& key, const std::string& reason) = 0;
    virtual void erase(const std::string& key) = 0;
    // A consistent point (a whole list, or the events of one read).
    virtual void publish() = 0;
};

class ListWatch {
public:
    // Throws kovs::Error when creds.server is not a usable URL.
    ListWatch(KubeCredentials creds, ListWatchOptions opts, ObjectStore& store);
    ~ListWatch();
    ListWatch(const ListWatch&) = delete;
    ListWatch& operator=(const ListWatch&) = delete;

    void start();
    // Interrupts a transfer in flight at once and joins the worker; the
    // store is not called after it returns.
    void stop();

    // Thread-safe counters, for status, metrics and tests.
    size_t failures() const { return failures_; }  // failed lists and watches
    size_t lists() const { return lists_; }        // successful lists
    size_t rejected() const { return rejected_; }  // objects that did not decode, ever
    bool absent() const { return absent_; }        // an optional resource the server does not serve (yet)
    const ListWatchOptions& options() const { return opts_; }

    // The query string of a list (watch false) or a watch from `resourceVersion`.
    std::string requestPath(bool watch, const std::string& resourceVersion) const;

private:
    enum class WatchEnd { Closed, Gone, NotServed, Broken, Garbage, Stopped };
    enum class Listed { Ok, Failed, Absent };

    void run();
    Listed list();
    WatchEnd watch();
    bool applyLine(const std::string& line, WatchEnd& end);
    void upsert(const std::string& key, const nlohmann::json& object);
    bool sleep(std::chrono::milliseconds d);  // false when stopping

    ListWatchOptions opts_;
    KubeHttpClient http_;
    ObjectStore& store_;

    // Worker-thread state.
    std::string resourceVersion_;
    bool watchProgressed_ = false;  // the last watch delivered at least one good event

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::atomic<size_t> failures_{0};
    std::atomic<size_t> lists_{0};
    std::atomic<size_t> rejected_{0};
    std::atomic<bool> absent_{false};
    std::thread worker_;
};

}  // namespace kovs::kube
