#pragma once
// A typed informer: ListWatch (list + watch on a worker thread) into a map of
// decoded objects on the EventLoop's thread, whose callback runs each time
// that map changed, like every other reconciler input, and never after
// stop() returned.
//
//   kube::Informer<Peer> nodes(loop, creds, {.resource = "nodes", .path = "/api/v1/nodes",
//                                            .fields = {"spec", "podCIDRs", ...}}, decodeNode);
//   nodes.start([](const kube::Snapshot<Peer>& s) { ... s.items ... s.rejected ... });
//
// The decoder returns the typed object, nullopt for an object that is valid
// but of no interest (a Node without an InternalIP yet), or throws
// kovs::Error for one that is malformed: that object alone is left out and
// listed in Snapshot::rejected with the reason, the others are used.
//
// Memory: the objects are held once, on the loop thread (snapshot()); the
// worker keeps only what it decoded since its last publish, and posts that.
// A consumer reads snapshot() rather than copying it (1000 kind Pods are
// about 0.7 MiB decoded: docs/benchmarks.md).
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "base/EventLoop.hpp"
#include "base/Metrics.hpp"
#include "kube/ListWatch.hpp"

namespace kovs::kube {

template <typename T>
struct Snapshot {
    std::map<std::string, T> items;               // key: name or namespace/name
    std::map<std::string, std::string> rejected;  // key -> why it did not decode
    bool operator==(const Snapshot&) const = default;
};

template <typename T>
class Informer : private ObjectStore {
public:
    using Decode = std::function<std::optional<T>(const nlohmann::json& object)>;
    using Callback = std::function<void(const Snapshot<T>&)>;

    Informer(EventLoop& loop, KubeCredentials creds, ListWatchOptions opts, Decode decode)
        : loop_(loop),
          decode_(std::move(decode)),
          delivery_(std::make_shared<Delivery>()),
          listWatch_(std::move(creds), std::move(opts), *this) {}
    ~Informer() override { stop(); }

    void start(Callback onChange) {
        delivery_->onChange = std::move(onChange);
        listWatch_.start();
    }
    // Call on the loop thread: no posted task is running then, so none runs after.
    void stop() {
        listWatch_.stop();
        delivery_->active = false;
        delivery_->onChange = nullptr;
    }

    // Loop thread: the objects as of the last callback, and whether there
    // was one (the first comes after the first list, even an empty one).
    const Snapshot<T>& snapshot() const { return delivery_->snapshot; }
    bool listed() const { return delivery_->listed; }

    const ListWatch& listWatch() const { return listWatch_; }

    // kovs_kube_objects_rejected_total{resource}, kovs_kube_lists_total, kovs_kube_failures_total.
    void metrics(MetricsText& m) const {
        MetricLabels l{{"resource", listWatch_.options().resource}};
        m.counter("kovs_kube_objects_rejected_total", "Kubernetes objects skipped because they did not decode.",
                  static_cast<double>(listWatch_.rejected()), l);
        m.counter("kovs_kube_lists_total", "Successful lists of a Kubernetes resource.",
                  static_cast<double>(listWatch_.lists()), l);
        m.counter("kovs_kube_failures_total", "Failed lists and watches of a Kubernetes resource.",
                  static_cast<double>(listWatch_.failures()), l);
    }

private:
    // What the worker read since its last publish(). nullopt: gone (erased,
    // of no interest, or no longer rejected).
    struct Batch {
        bool replace = false;  // a list: what it does not hold is gone
        std::map<std::string, std::optional<T>> items;
        std::map<std::string, std::optional<std::string>> rejected;
    };
    // Loop-thread state, shared with the posted batches.
    struct Delivery {
        Callback onChange;
        bool active = true;
        bool listed = false;
        Snapshot<T> snapshot;

        // True if the snapshot changed.
        bool apply(Batch& b) {
            if (b.replace) {
                Snapshot<T> next;
                for (auto& [key, v] : b.items) {
                    if (v) next.items.emplace(key, std::move(*v));
                }
                for (auto& [key, why] : b.rejected) {
                    if (why) next.rejected.emplace(key, std::move(*why));
                }
                bool changed = !(next == snapshot);
                snapshot = std::move(next);
                return changed;
            }
            bool itemsChanged = patch(snapshot.items, b.items);
            bool rejectedChanged = patch(snapshot.rejected, b.rejected);
            return itemsChanged || rejectedChanged;
        }
        template <typename V>
        static bool patch(std::map<std::string, V>& into, std::map<std::string, std::optional<V>>& from) {
            bool changed = false;
            for (auto& [key, v] : from) {
                if (!v) {
                    changed |= into.erase(key) > 0;
                    continue;
                }
                auto it = into.find(key);
                if (it != into.end() && it->second == *v) continue;
                into.insert_or_assign(key, std::move(*v));
                changed = true;
            }
            return changed;
        }
    };

    // ObjectStore, on the worker thread.
    void clear() override { batch_ = Batch{.replace = true}; }
    void upsert(const std::string& key, const nlohmann::json& object) override {
        auto value = decode_(object);  // throws: ListWatch rejects it
        batch_.items.insert_or_assign(key, std::move(value));
        gone(batch_.rejected, key);
    }
    void reject(const std::string& key, const std::string& reason) override {
        gone(batch_.items, key);
        batch_.rejected.insert_or_assign(key, reason);
    }
    void erase(const std::string& key) override {
        gone(batch_.items, key);
        gone(batch_.rejected, key);
    }
    // A list replaces everything: what it does not hold needs no entry.
    template <typename V>
    void gone(std::map<std::string, std::optional<V>>& m, const std::string& key) {
        if (batch_.replace) {
            m.erase(key);
        } else {
            m.insert_or_assign(key, std::nullopt);
        }
    }
    void publish() override {
        if (!batch_.replace && batch_.items.empty() && batch_.rejected.empty()) return;
        loop_.post([delivery = delivery_, batch = std::exchange(batch_, {})]() mutable {
            if (!delivery->active) return;
            bool changed = delivery->apply(batch);
            if (!changed && delivery->listed) return;
            delivery->listed = true;
            if (delivery->onChange) delivery->onChange(delivery->snapshot);
        });
    }

    EventLoop& loop_;
    Decode decode_;
    std::shared_ptr<Delivery> delivery_;
    Batch batch_;  // worker thread
    ListWatch listWatch_;  // last: its worker uses the members above
};

}  // namespace kovs::kube
