#pragma once
// A typed informer: ListWatch (list + watch on a worker thread) into a map of
// decoded objects, whose whole state is post()ed to the EventLoop each time
// it changes. The callback runs on the loop thread like every other
// reconciler input, and never after stop() returned.
//
//   kube::Informer<Peer> nodes(loop, creds, {.resource = "nodes", .path = "/api/v1/nodes",
//                                            .fields = {"spec", "podCIDRs", ...}}, decodeNode);
//   nodes.start([](const kube::Snapshot<Peer>& s) { ... s.items ... s.rejected ... });
//
// The decoder returns the typed object, nullopt for an object that is valid
// but of no interest (a Node without an InternalIP yet), or throws
// kovs::Error for one that is malformed: that object alone is left out and
// listed in Snapshot::rejected with the reason, the others are used.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

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
        : loop_(loop), decode_(std::move(decode)), listWatch_(std::move(creds), std::move(opts), *this) {}
    ~Informer() override { stop(); }

    void start(Callback onChange) {
        delivery_ = std::make_shared<Delivery>();
        delivery_->onChange = std::move(onChange);
        listWatch_.start();
    }
    // Call on the loop thread: no posted task is running then, so none runs after.
    void stop() {
        listWatch_.stop();
        if (delivery_) {
            delivery_->active = false;
            delivery_->onChange = nullptr;
        }
    }

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
    struct Delivery {
        Callback onChange;
        bool active = true;
    };

    // Only what changed is posted, without keeping a copy of what was: a
    // list compares against the state it replaces, an event against the
    // object it replaces.
    void clear() override {
        listBase_ = std::move(state_);
        state_ = {};
    }
    void upsert(const std::string& key, const nlohmann::json& object) override {
        auto value = decode_(object);
        dirty_ |= state_.rejected.erase(key) > 0;
        if (!value) {
            dirty_ |= state_.items.erase(key) > 0;
            return;
        }
        auto it = state_.items.find(key);
        if (it != state_.items.end() && it->second == *value) return;
        state_.items.insert_or_assign(key, std::move(*value));
        dirty_ = true;
    }
    void reject(const std::string& key, const std::string& reason) override {
        dirty_ |= state_.items.erase(key) > 0;
        auto [it, added] = state_.rejected.try_emplace(key, reason);
        if (added || it->second != reason) dirty_ = true;
        it->second = reason;
    }
    void erase(const std::string& key) override {
        dirty_ |= state_.items.erase(key) > 0;
        dirty_ |= state_.rejected.erase(key) > 0;
    }
    void publish() override {
        if (listBase_) {
            // A list replaced everything: what counts is how it differs from
            // what was there (and published) before.
            dirty_ = !(*listBase_ == state_);
            listBase_.reset();
        }
        if (published_ && !dirty_) return;
        published_ = true;
        dirty_ = false;
        loop_.post([delivery = delivery_, snapshot = state_] {
            if (delivery->active && delivery->onChange) delivery->onChange(snapshot);
        });
    }

    EventLoop& loop_;
    Decode decode_;
    std::shared_ptr<Delivery> delivery_;
    // Worker-thread state.
    Snapshot<T> state_;
    std::optional<Snapshot<T>> listBase_;  // between clear() and publish()
    bool dirty_ = false;
    bool published_ = false;
    ListWatch listWatch_;  // last: its worker uses the members above
};

}  // namespace kovs::kube
