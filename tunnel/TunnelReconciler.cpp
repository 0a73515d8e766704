#include "tunnel/TunnelReconciler.hpp"

#include <sys/inotify.h>

#include <algorithm>
#include <filesystem>

#include "base/Error.hpp"
#include "base/Log.hpp"
#include "tunnel/OvsTunnelState.hpp"

namespace kovs::tunnel {

namespace {

std::string hostRoute(const std::string& ip) { return ip + (ip.find(':') != std::string::npos ? "/128" : "/32"); }

bool isHostRoute(const std::string& prefix) {
    auto slash = prefix.find('/');
    if (slash == std::string::npos) return false;
    auto plen = prefix.substr(slash + 1);
    return plen == (prefix.find(':') != std::string::npos ? "128" : "32");
}

}  // namespace

TunnelReconciler::TunnelReconciler(EventLoop& loop, UnixctlClient& ovs, NeighbourTable& neighbours,
                                   TunnelReconcilerOptions opts)
    : loop_(loop), ovs_(ovs), neighbours_(neighbours), opts_(std::move(opts)), retry_(opts_.retryInitial) {}

TunnelReconciler::~TunnelReconciler() { stop(); }

void TunnelReconciler::start() {
    if (started_) return;
    started_ = true;
    // A restarted vswitchd rewrites its pidfile: re-program at once instead of
    // waiting for the next periodic resync.
    auto dir = std::filesystem::path(ovs_.pidfilePath()).parent_path().string();
    UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (fd && ::inotify_add_watch(fd.get(), dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) >= 0) {
        inotify_ = std::move(fd);
        loop_.watch(inotify_.get(), EPOLLIN, [this](uint32_t) { onPidfileEvent(); });
    } else {
        spdlog::warn("tunnel: cannot watch {} for vswitchd restarts ({}); relying on the periodic resync", dir,
                     std::strerror(errno));
    }
    reconcile();
}

void TunnelReconciler::stop() {
    if (!started_) return;
    started_ = false;
    if (timer_) loop_.cancel(timer_);
    timer_ = 0;
    if (inotify_) loop_.unwatch(inotify_.get());
    inotify_.reset();
}

void TunnelReconciler::onPidfileEvent() {
    alignas(inotify_event) char buf[4096];
    auto pidfile = std::filesystem::path(ovs_.pidfilePath()).filename().string();
    bool ours = false;
    ssize_t n;
    while ((n = ::read(inotify_.get(), buf, sizeof buf)) > 0) {
        for (char* p = buf; p < buf + n;) {
            auto* ev = reinterpret_cast<inotify_event*>(p);
            if ((ev->len > 0 && pidfile == ev->name) || (ev->mask & IN_Q_OVERFLOW)) ours = true;
            p += sizeof(inotify_event) + ev->len;
        }
    }
    if (ours) {
        retry_ = opts_.retryInitial;
        schedule(std::chrono::milliseconds(0));
    }
}

void TunnelReconciler::setPeers(const PeerSet& peers) {
    for (const auto& [_, p] : peers_) formerPeers_.insert(p.nodeIP);
    peers_ = peers;
    for (const auto& [_, p] : peers_) formerPeers_.erase(p.nodeIP);  // only those that left
    stats_.peers = peers_.size();
    retry_ = opts_.retryInitial;
    reconcile();
}

void TunnelReconciler::schedule(std::chrono::milliseconds delay) {
    if (!started_) return;
    if (timer_) loop_.cancel(timer_);
    timer_ = loop_.after(delay, [this] {
        timer_ = 0;
        reconcile();
    });
}

void TunnelReconciler::reconcile() {
    ++stats_.passes;
    bool clean = false;
    try {
        pass();
        stats_.lastError.clear();
        clean = stats_.unresolved == 0;
    } catch (const std::exception& e) {
        if (stats_.lastError != e.what()) spdlog::warn("tunnel: {}; retrying", e.what());
        stats_.lastError = e.what();
    }
    if (clean) {
        retry_ = opts_.retryInitial;
        schedule(opts_.resync);
    } else {
        schedule(retry_);
        retry_ = std::min(retry_ * 2, opts_.resync);
    }
}

void TunnelReconciler::pass() {
    const std::string& br = opts_.bridge;

    // 1. Peer MACs from the kernel; unknown ones get a resolution nudge and
    //    keep their last known MAC meanwhile.
    std::map<std::string, std::string> kernel;
    try {
        kernel = neighbours_.resolved(br);
    } catch (const Error& e) {
        // br-phy is a vswitchd tap: it is gone while vswitchd restarts.
        spdlog::debug("tunnel: {}", e.what());
    }
    std::set<std::string> peerIPs;
    stats_.unresolved = 0;
    for (const auto& [name, peer] : peers_) {
        peerIPs.insert(peer.nodeIP);
        if (auto it = kernel.find(peer.nodeIP); it != kernel.end()) {
            macs_[peer.nodeIP] = it->second;
        } else {
            neighbours_.trigger(peer.nodeIP);
            if (!macs_.count(peer.nodeIP)) ++stats_.unresolved;
        }
    }
    std::erase_if(macs_, [&](const auto& kv) { return !peerIPs.count(kv.first); });

    // 2. What vswitchd holds now (an empty answer from a fresh vswitchd).
    auto shown = ovs_.pipeline({{"ovs/route/show", {}}, {"tnl/neigh/show", {}}});
    for (const auto& r : shown) {
        if (!r.ok) throw Error("ovs/route/show, tnl/neigh/show: " + r.text);
    }
    if (ovs_.pid() != programmedPid_) {
        if (programmedPid_ > 0) {
            ++stats_.vswitchdRestarts;
            spdlog::info("tunnel: ovs-vswitchd restarted (pid {} -> {}); re-programming {} peers", programmedPid_,
                         ovs_.pid(), peers_.size());
        }
        programmedPid_ = ovs_.pid();
        ownedNeighbours_.clear();
    }
    auto actual = parseOvsTunnelState(shown[0].text, shown[1].text, br);

    // 3. The difference, as one batch.
    std::vector<UnixctlCommand> cmds;
    for (const auto& prefix : actual.userRoutes) {
        auto ip = prefix.substr(0, prefix.find('/'));
        if (isHostRoute(prefix) && !peerIPs.count(ip)) cmds.push_back({"ovs/route/del", {prefix}});
    }
    for (const auto& ip : peerIPs) {
        if (!actual.userRoutes.count(hostRoute(ip))) cmds.push_back({"ovs/route/add", {hostRoute(ip), br}});
    }
    // A neighbour of a peer that left must go, whether we set it or OVS
    // learned it by snooping ARP on the bridge.
    auto isStale = [&](const std::string& ip) { return !peerIPs.count(ip) && actual.neighbours.count(ip); };
    bool staleNeighbour = std::any_of(ownedNeighbours_.begin(), ownedNeighbours_.end(), isStale) ||
                          std::any_of(formerPeers_.begin(), formerPeers_.end(), isStale);
    auto now = EventLoop::Clock::now();
    bool refresh = staleNeighbour || now - lastRefresh_ >= opts_.neighRefresh;
    if (staleNeighbour) cmds.push_back({"tnl/neigh/flush", {}});
    std::set<std::string> neighSet;
    for (const auto& [ip, mac] : macs_) {
        auto it = actual.neighbours.find(ip);
        if (refresh || it == actual.neighbours.end() || it->second != mac) {
            cmds.push_back({"tnl/neigh/set", {br, ip, mac}});
            neighSet.insert(ip);
        }
    }
    // What vswitchd holds once this batch is applied (for status and doctor).
    routed_.clear();
    neighboured_.clear();
    for (const auto& prefix : actual.userRoutes) routed_.insert(prefix.substr(0, prefix.find('/')));
    if (!staleNeighbour) {
        for (const auto& [ip, _] : actual.neighbours) neighboured_.insert(ip);
    }
    if (cmds.empty()) return;

    auto replies = ovs_.pipeline(cmds);
    for (size_t i = 0; i < cmds.size() && i < replies.size(); ++i) {
        if (!replies[i].ok) continue;
        const auto& c = cmds[i];
        if (c.command == "ovs/route/add") routed_.insert(c.args[0].substr(0, c.args[0].find('/')));
        if (c.command == "ovs/route/del") routed_.erase(c.args[0].substr(0, c.args[0].find('/')));
        if (c.command == "tnl/neigh/set") neighboured_.insert(c.args[1]);
        // Flushed once: an entry OVS learns again later for an IP that is no
        // peer is harmless (no route sends tunnels to it) and no reason to
        // flush every peer's neighbour on every pass from now on.
        if (c.command == "tnl/neigh/flush") formerPeers_.clear();
    }
    stats_.commandsSent += cmds.size();
    std::string firstError;
    size_t failures = 0;
    for (size_t i = 0; i < cmds.size(); ++i) {
        if (replies[i].ok) continue;
        ++failures;
        if (firstError.empty()) firstError = cmds[i].describe() + ": " + replies[i].text;
        if (cmds[i].command == "tnl/neigh/set") neighSet.erase(cmds[i].args[1]);
    }
    if (staleNeighbour) {
        ownedNeighbours_ = neighSet;
    } else {
        ownedNeighbours_.insert(neighSet.begin(), neighSet.end());
    }
    std::erase_if(ownedNeighbours_, [&](const std::string& ip) { return !peerIPs.count(ip) && !staleNeighbour; });
    if (refresh && failures == 0) lastRefresh_ = now;
    spdlog::debug("tunnel: sent {} commands for {} peers, {} failed", cmds.size(), peers_.size(), failures);
    if (failures) {
        while (!firstError.empty() && firstError.back() == '\n') firstError.pop_back();
        throw Error(std::to_string(failures) + " of " + std::to_string(cmds.size()) + " unixctl commands failed, first: " +
                    firstError);
    }
}

}  // namespace kovs::tunnel
