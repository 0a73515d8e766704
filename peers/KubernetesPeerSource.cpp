#include "peers/KubernetesPeerSource.hpp"

#include <algorithm>

#include "base/Error.hpp"
#include "base/Log.hpp"
#include "peers/kube/KubeNode.hpp"

namespace kovs::peers {

namespace {
using namespace std::chrono_literals;

std::string excerpt(const std::string& s) { return s.size() > 200 ? s.substr(0, 200) + "..." : s; }
// An error body is only quoted in the log: its first 64 KiB are plenty.
void keepErrorBody(std::string& body, std::string_view d) {
    constexpr size_t kMaxErrorBody = 64 << 10;
    if (body.size() < kMaxErrorBody) body.append(d.substr(0, kMaxErrorBody - body.size()));
}
}  // namespace

KubernetesPeerSource::KubernetesPeerSource(EventLoop& loop, KubeCredentials creds, KubernetesPeerSourceOptions opts)
    : loop_(loop), opts_(std::move(opts)), http_(std::move(creds)) {}

KubernetesPeerSource::~KubernetesPeerSource() { stop(); }

void KubernetesPeerSource::start(Callback onPeers) {
    if (worker_.joinable()) throw Error("Kubernetes peer source " + http_.server() + ": already started");
    delivery_ = std::make_shared<Delivery>();
    delivery_->onPeers = std::move(onPeers);
    worker_ = std::thread([this] { run(); });
}

void KubernetesPeerSource::stop() {
    if (!worker_.joinable()) return;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    http_.interrupt();
    worker_.join();
    // stop() runs on the loop thread, so no posted task is running right now.
    delivery_->active = false;
    delivery_->onPeers = nullptr;
}

bool KubernetesPeerSource::sleep(std::chrono::milliseconds d) {
    std::unique_lock lock(mutex_);
    return !wake_.wait_for(lock, d, [this] { return stopping_; });
}

void KubernetesPeerSource::publish() {
    if (published_ && *published_ == peers_) return;
    published_ = peers_;
    auto delivery = delivery_;
    loop_.post([delivery, peers = peers_] {
        if (delivery->active && delivery->onPeers) delivery->onPeers(peers);
    });
}

void KubernetesPeerSource::run() {
    auto backoff = opts_.backoffInitial;
    auto failed = [&](const std::string& why) {
        ++failures_;
        spdlog::warn("Kubernetes peers ({}): {}; retrying in {} ms, keeping {} known peers", http_.server(), why,
                     backoff.count(), peers_.size());
        bool keepGoing = sleep(backoff);
        backoff = std::min(backoff * 2, opts_.backoffMax);
        return keepGoing;
    };
    bool needList = true;
    while (true) {
        {
            std::lock_guard lock(mutex_);
            if (stopping_) return;
        }
        try {
            if (needList) {
                // What the list frees is handed back to the kernel by the
                // agent's periodic malloc_trim (agent/main.cpp).
                if (!list()) {
                    if (!failed("list nodes failed")) return;
                    continue;
                }
                needList = false;
                backoff = opts_.backoffInitial;
            }
            auto started = std::chrono::steady_clock::now();
            watchProgressed_ = false;
            auto end = watch();
            if (watchProgressed_) backoff = opts_.backoffInitial;
            switch (end) {
                case WatchEnd::Stopped:
                    return;
                case WatchEnd::Gone:
                    spdlog::info("Kubernetes peers: resourceVersion {} expired (410 Gone); relisting", resourceVersion_);
                    needList = true;
                    break;
                case WatchEnd::Closed:
                    // A server that closes right away every time must not be hammered.
                    if (std::chrono::steady_clock::now() - started < 1s && !failed("watch closed immediately")) return;
                    break;
                case WatchEnd::Broken:
                    if (!failed("watch connection lost")) return;
                    break;
                case WatchEnd::Garbage:
                    needList = true;
                    if (!failed("bad watch stream, reconnecting")) return;
                    break;
            }
        } catch (const std::exception& e) {
            // Token file unreadable and the like: retry, the set stays.
            if (!failed(e.what())) return;
        }
    }
}

bool KubernetesPeerSource::list() {
    std::string body;
    bool tooBig = false;
    auto r = http_.get("/api/v1/nodes", [&](long status, std::string_view d) {
        if (status != 200) {
            keepErrorBody(body, d);
            return true;
        }
        tooBig = body.size() + d.size() > opts_.maxListBytes;
        if (!tooBig) body.append(d);
        return !tooBig;
    }, 60s);
    if (r.interrupted) return false;
    if (tooBig) {
        spdlog::error("Kubernetes peers: GET {}/api/v1/nodes: the NodeList is larger than {} KiB; refused",
                      http_.server(), opts_.maxListBytes >> 10);
        return false;
    }
    if (!r.complete || r.status != 200) {
        spdlog::warn("Kubernetes peers: GET {}/api/v1/nodes: HTTP {} {} {}", http_.server(), r.status, r.error,
                     excerpt(body));
        return false;
    }
    NodeList nodes;
    try {
        nodes = parseNodeList(body, opts_.nodeName);
    } catch (const Error& e) {
        spdlog::error("Kubernetes peers: GET {}/api/v1/nodes: {}", http_.server(), e.what());
        return false;
    }
    resourceVersion_ = nodes.resourceVersion;
    peers_ = std::move(nodes.peers);
    spdlog::info("Kubernetes peers: listed {} peers at resourceVersion {}", peers_.size(), resourceVersion_);
    publish();
    return true;
}

bool KubernetesPeerSource::applyLine(const std::string& line, WatchEnd& end) {
    WatchEvent ev;
    try {
        ev = parseWatchEvent(line);
    } catch (const Error& e) {
        spdlog::error("Kubernetes peers: watch: {} in line '{}'", e.what(), excerpt(line));
        end = WatchEnd::Garbage;
        return false;
    }
    switch (ev.type) {
        case WatchEvent::Type::Error:
            spdlog::warn("Kubernetes peers: watch ERROR {}: {}", ev.errorCode, ev.errorMessage);
            end = ev.errorCode == 410 ? WatchEnd::Gone : WatchEnd::Garbage;
            return false;
        case WatchEvent::Type::Added:
        case WatchEvent::Type::Modified:
            if (ev.nodeName == opts_.nodeName) break;
            if (ev.peer) {
                peers_[ev.nodeName] = std::move(*ev.peer);
            } else {
                peers_.erase(ev.nodeName);  // lost its InternalIP: nothing to tunnel to
            }
            break;
        case WatchEvent::Type::Deleted:
            peers_.erase(ev.nodeName);
            break;
        case WatchEvent::Type::Bookmark:
            break;
    }
    resourceVersion_ = ev.resourceVersion;
    return true;
}

KubernetesPeerSource::WatchEnd KubernetesPeerSource::watch() {
    std::string path = "/api/v1/nodes?watch=true&allowWatchBookmarks=true&resourceVersion=" + resourceVersion_ +
                       "&timeoutSeconds=" + std::to_string(opts_.watchTimeoutSeconds);
    std::string pending;
    WatchEnd end = WatchEnd::Closed;
    auto r = http_.get(path, [&](long status, std::string_view d) {
        if (status != 200) {  // an error body, reported below
            keepErrorBody(pending, d);
            return true;
        }
        pending.append(d);
        size_t start = 0, nl;
        bool ok = true;
        while (ok && (nl = pending.find('\n', start)) != std::string::npos) {
            std::string line = pending.substr(start, nl - start);
            start = nl + 1;
            if (line.empty() || line == "\r") continue;
            ok = applyLine(line, end);
            watchProgressed_ = watchProgressed_ || ok;
        }
        pending.erase(0, start);
        publish();
        if (ok && pending.size() > opts_.maxEventBytes) {
            spdlog::error("Kubernetes peers: watch: an event larger than {} KiB; dropped the stream",
                          opts_.maxEventBytes >> 10);
            pending.clear();
            end = WatchEnd::Garbage;
            ok = false;
        }
        return ok;
    }, std::chrono::seconds(opts_.watchTimeoutSeconds + 60));
    if (r.interrupted) return WatchEnd::Stopped;
    if (r.status == 410) return WatchEnd::Gone;
    if (r.status != 0 && r.status != 200) {
        spdlog::warn("Kubernetes peers: watch GET {}: HTTP {}: {}", http_.server(), r.status, excerpt(pending));
        return WatchEnd::Broken;
    }
    if (end == WatchEnd::Gone || end == WatchEnd::Garbage) return end;
    if (!pending.empty()) {
        spdlog::error("Kubernetes peers: watch stream ended inside an event, dropped partial line '{}'",
                      excerpt(pending));
        return WatchEnd::Garbage;
    }
    if (!r.complete) {
        spdlog::warn("Kubernetes peers: watch: {}", r.error);
        return WatchEnd::Broken;
    }
    return WatchEnd::Closed;
}

}  // namespace kovs::peers
