#include "kube/ListWatch.hpp"

#include <algorithm>
#include <cctype>

#include <spdlog/spdlog.h>

#include "base/Error.hpp"
#include "kube/ApiPayload.hpp"

namespace kovs::kube {
namespace {
using namespace std::chrono_literals;
using nlohmann::json;

std::string excerpt(const std::string& s) { return s.size() > 200 ? s.substr(0, 200) + "..." : s; }
// An error body is only quoted in the log: its first 64 KiB are plenty.
void keepErrorBody(std::string& body, std::string_view d) {
    constexpr size_t kMaxErrorBody = 64 << 10;
    if (body.size() < kMaxErrorBody) body.append(d.substr(0, kMaxErrorBody - body.size()));
}

// RFC 3986 unreserved characters stay, everything else is %XX.
std::string urlEncode(const std::string& s) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

}  // namespace

ListWatch::ListWatch(KubeCredentials creds, ListWatchOptions opts, ObjectStore& store)
    : opts_(std::move(opts)), http_(std::move(creds)), store_(store) {
    if (opts_.path.empty() || opts_.path.front() != '/' || opts_.path.find('?') != std::string::npos)
        throw Error("Kubernetes " + opts_.resource + ": resource path '" + opts_.path + "' is not an API path");
}

ListWatch::~ListWatch() { stop(); }

void ListWatch::start() {
    if (worker_.joinable()) throw Error("Kubernetes " + opts_.resource + " " + http_.server() + ": already started");
    worker_ = std::thread([this] { run(); });
}

void ListWatch::stop() {
    if (!worker_.joinable()) return;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    http_.interrupt();
    worker_.join();
}

bool ListWatch::sleep(std::chrono::milliseconds d) {
    std::unique_lock lock(mutex_);
    return !wake_.wait_for(lock, d, [this] { return stopping_; });
}

std::string ListWatch::requestPath(bool watch, const std::string& resourceVersion) const {
    std::vector<std::string> q;
    if (watch) {
        q = {"watch=true", "allowWatchBookmarks=true", "resourceVersion=" + urlEncode(resourceVersion),
             "timeoutSeconds=" + std::to_string(opts_.watchTimeoutSeconds)};
    }
    if (!opts_.labelSelector.empty()) q.push_back("labelSelector=" + urlEncode(opts_.labelSelector));
    if (!opts_.fieldSelector.empty()) q.push_back("fieldSelector=" + urlEncode(opts_.fieldSelector));
    std::string path = opts_.path;
    for (size_t i = 0; i < q.size(); ++i) path += (i ? "&" : "?") + q[i];
    return path;
}

void ListWatch::run() {
    auto backoff = opts_.backoffInitial;
    auto failed = [&](const std::string& why) {
        ++failures_;
        spdlog::warn("Kubernetes {} ({}): {}; retrying in {} ms", opts_.resource, http_.server(), why, backoff.count());
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
                auto listed = list();
                if (listed == Listed::Failed) {
                    if (!failed("list failed")) return;
                    continue;
                }
                if (listed == Listed::Absent) {
                    if (!sleep(opts_.backoffMax)) return;
                    continue;
                }
                needList = false;
            }
            auto started = std::chrono::steady_clock::now();
            watchProgressed_ = false;
            auto end = watch();
            if (watchProgressed_) backoff = opts_.backoffInitial;
            switch (end) {
                case WatchEnd::Stopped:
                    return;
                case WatchEnd::Gone:
                    // A server that expires every watch at once must not be
                    // listed in a tight loop: the relist waits its turn.
                    needList = true;
                    if (!failed("resourceVersion " + resourceVersion_ + " expired (410 Gone), relisting")) return;
                    break;
                case WatchEnd::NotServed:
                    needList = true;
                    if (!failed("no longer served (its CRD removed?), relisting")) return;
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
                    if (!failed("bad watch stream, relisting")) return;
                    break;
            }
        } catch (const std::exception& e) {
            // Token file unreadable and the like: retry, the store stays.
            if (!failed(e.what())) return;
        }
    }
}

void ListWatch::upsert(const std::string& key, const json& object) {
    try {
        store_.upsert(key, object);
    } catch (const Error& e) {
        ++rejected_;
        spdlog::warn("Kubernetes {}: {} skipped: {}", opts_.resource, key, e.what());
        store_.reject(key, e.what());
    }
}

ListWatch::Listed ListWatch::list() {
    std::string body;
    bool tooBig = false;
    std::string path = requestPath(false, "");
    auto r = http_.get(path, [&](long status, std::string_view d) {
        if (status != 200) {
            keepErrorBody(body, d);
            return true;
        }
        tooBig = body.size() + d.size() > opts_.maxListBytes;
        if (!tooBig) body.append(d);
        return !tooBig;
    }, 60s);
    if (r.interrupted) return Listed::Failed;
    if (tooBig) {
        spdlog::error("Kubernetes {}: GET {}{}: the list is larger than {} KiB; refused", opts_.resource,
                      http_.server(), path, opts_.maxListBytes >> 10);
        return Listed::Failed;
    }
    if (r.complete && r.status == 404 && opts_.optional) {
        if (!absent_.exchange(true))
            spdlog::info("Kubernetes {}: not served by {} (its CRD is not installed); looking again every {:g} s", opts_.resource,
                         http_.server(), std::chrono::duration<double>(opts_.backoffMax).count());
        store_.clear();
        store_.publish();
        return Listed::Absent;
    }
    if (!r.complete || r.status != 200) {
        spdlog::warn("Kubernetes {}: GET {}{}: HTTP {} {} {}", opts_.resource, http_.server(), path, r.status, r.error,
                     excerpt(body));
        return Listed::Failed;
    }
    // Each item goes to the store as it is parsed. A list that turns out
    // malformed further on leaves its items in the store's batch, unpublished:
    // the next list's clear() drops them.
    store_.clear();
    size_t skipped = rejected_, items = 0;
    try {
        resourceVersion_ = parseListPayload(body, opts_.fields, [&](json&& item) {
            ++items;
            try {
                upsert(objectKey(item), item);
            } catch (const Error& e) {  // no name to key it by
                ++rejected_;
                spdlog::warn("Kubernetes {}: an item of the list skipped: {}", opts_.resource, e.what());
            }
        });
    } catch (const Error& e) {
        spdlog::error("Kubernetes {}: GET {}{}: {}", opts_.resource, http_.server(), path, e.what());
        return Listed::Failed;
    }
    body.clear();
    body.shrink_to_fit();
    skipped = rejected_ - skipped;
    ++lists_;
    spdlog::info("Kubernetes {}: listed {} object(s) at resourceVersion {}{}", opts_.resource, items,
                 resourceVersion_, skipped ? fmt::format(", {} skipped", skipped) : "");
    absent_ = false;
    store_.publish();
    return Listed::Ok;
}

bool ListWatch::applyLine(const std::string& line, WatchEnd& end) {
    using Type = WatchEventPayload::Type;
    WatchEventPayload ev;
    try {
        ev = parseWatchLine(line, opts_.fields);
    } catch (const Error& e) {
        spdlog::error("Kubernetes {}: watch: {} in line '{}'", opts_.resource, e.what(), excerpt(line));
        end = WatchEnd::Garbage;
        return false;
    }
    if (ev.type == Type::Error) {
        spdlog::warn("Kubernetes {}: watch ERROR {}: {}", opts_.resource, ev.errorCode, ev.errorMessage);
        end = ev.errorCode == 410 ? WatchEnd::Gone : WatchEnd::Garbage;
        return false;
    }
    if (ev.type != Type::Bookmark) {
        try {
            std::string key = objectKey(ev.object);
            if (ev.type == Type::Deleted) {
                store_.erase(key);
            } else {
                upsert(key, ev.object);
            }
        } catch (const Error& e) {
            // Nothing to key it by, so nothing in the store it could
            // replace: skipped, and the stream goes on.
            ++rejected_;
            spdlog::warn("Kubernetes {}: a watch event skipped: {}", opts_.resource, e.what());
        }
    }
    resourceVersion_ = ev.resourceVersion;
    return true;
}

ListWatch::WatchEnd ListWatch::watch() {
    std::string path = requestPath(true, resourceVersion_);
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
        store_.publish();
        if (ok && pending.size() > opts_.maxEventBytes) {
            spdlog::error("Kubernetes {}: watch: an event larger than {} KiB; dropped the stream", opts_.resource,
                          opts_.maxEventBytes >> 10);
            pending.clear();
            end = WatchEnd::Garbage;
            ok = false;
        }
        return ok;
    }, std::chrono::seconds(opts_.watchTimeoutSeconds + 60));
    if (r.interrupted) return WatchEnd::Stopped;
    if (r.status == 410) return WatchEnd::Gone;
    if (r.status == 404 && opts_.optional) return WatchEnd::NotServed;
    if (r.status != 0 && r.status != 200) {
        spdlog::warn("Kubernetes {}: watch GET {}: HTTP {}: {}", opts_.resource, http_.server(), r.status,
                     excerpt(pending));
        return WatchEnd::Broken;
    }
    if (end == WatchEnd::Gone || end == WatchEnd::Garbage) return end;
    if (!pending.empty()) {
        spdlog::error("Kubernetes {}: watch stream ended inside an event, dropped partial line '{}'", opts_.resource,
                      excerpt(pending));
        return WatchEnd::Garbage;
    }
    if (!r.complete) {
        spdlog::warn("Kubernetes {}: watch: {}", opts_.resource, r.error);
        return WatchEnd::Broken;
    }
    return WatchEnd::Closed;
}

}  // namespace kovs::kube
