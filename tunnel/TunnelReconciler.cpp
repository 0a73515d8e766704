#include "tunnel/TunnelReconciler.hpp"

#include "base/Error.hpp"
#include "base/Log.hpp"
#include "tunnel/OvsTunnelState.hpp"

namespace kovs::tunnel {

TunnelReconciler::TunnelReconciler(EventLoop& loop, ovs::UnixctlClient& ovs, NeighbourTable& neighbours,
                                   TunnelReconcilerOptions opts)
    : loop_(loop),
      ovs_(ovs),
      neighbours_(neighbours),
      opts_(std::move(opts)),
      engine_(loop_,
              {.job = "tunnel", .resync = opts_.resync, .retryMin = opts_.retryInitial, .retryMax = opts_.resync},
              [this](bool, Done done) { pass(std::move(done)); }) {
    desired_.bridge = opts_.bridge;
}

TunnelReconciler::~TunnelReconciler() {
    *alive_ = false;
    stop();
}

void TunnelReconciler::start() {
    if (engine_.started()) return;
    // A restarted vswitchd rewrites its pidfile: re-program at once instead
    // of waiting for the next resync.
    try {
        pidfileWatch_ = std::make_unique<DirectoryWatch>(loop_, ovs_.pidfilePath(), [this] {
            engine_.resetBackoff();
            reconcile();
        });
    } catch (const Error& e) {
        spdlog::warn("tunnel: {}; relying on the periodic resync to see vswitchd restarts", e.what());
    }
    engine_.start();
}

void TunnelReconciler::stop() {
    pidfileWatch_.reset();
    engine_.stop();
}

TunnelReconciler::Stats TunnelReconciler::stats() const {
    Stats s = stats_;
    s.passes = engine_.passes();
    s.lastError = engine_.lastError();
    return s;
}

void TunnelReconciler::setPeers(const peers::PeerSet& peers) {
    std::set<std::string> ips;
    for (const auto& [_, p] : peers) ips.insert(p.tunnelAddress());
    // Peers that left: their neighbour must go even if OVS, not kovs, set it.
    for (const auto& ip : desired_.peerIPs) {
        if (!ips.count(ip)) memory_.formerPeers.insert(ip);
    }
    for (const auto& ip : ips) memory_.formerPeers.erase(ip);
    desired_.peerIPs = std::move(ips);
    stats_.peers = desired_.peerIPs.size();
    engine_.resetBackoff();
    reconcile();
}

bool TunnelReconciler::reconcileOnce(std::chrono::milliseconds timeout) {
    if (!engine_.started()) start();
    uint64_t before = engine_.passes();
    // The pass in flight (if any) may have read state from before the call.
    uint64_t want = before + (engine_.passInFlight() ? 2 : 1);
    reconcile();
    bool done = loop_.runUntil([&] { return engine_.passes() >= want; }, timeout);
    return done && engine_.lastError().empty();
}

void TunnelReconciler::pass(Done done) {
    // Observed, the kernel's half. br-phy is a vswitchd tap: it is gone
    // while vswitchd restarts, which just means no MACs this pass.
    std::map<std::string, std::string> macs;
    try {
        macs = neighbours_.resolved(opts_.bridge);
    } catch (const Error& e) {
        spdlog::debug("tunnel: {}", e.what());
    }
    // Observed, vswitchd's half.
    auto token = alive_;
    ovs_.pipeline(ovsTunnelReadBack(), [this, token, macs = std::move(macs), done = std::move(done)](ovs::UnixctlReplies shown) mutable {
        if (!*token) return;
        TunnelObserved observed;
        observed.vswitchdPid = shown.pid;
        try {
            observed.ovs = parseOvsTunnelReadBack(shown, opts_.bridge);
        } catch (const Error& e) {
            finishPass(TunnelPlan{}, e.what(), done);
            return;
        }
        observed.kernelMacs = std::move(macs);
        observed.refreshDue = EventLoop::Clock::now() - lastRefresh_ >= opts_.neighRefresh;
        applyPlan(observed, std::move(done));
    });
}

void TunnelReconciler::applyPlan(const TunnelObserved& observed, Done done) {
    auto plan = planTunnel(desired_, observed, memory_);
    if (plan.vswitchdRestarted) {
        ++stats_.vswitchdRestarts;
        spdlog::info("tunnel: ovs-vswitchd restarted (pid {} -> {}); re-programming {} peers", memory_.vswitchdPid,
                     observed.vswitchdPid, desired_.peerIPs.size());
    }
    // The kernel only resolves for traffic: nudge it for peers it lacks.
    // A peer IP it cannot even send to is that peer's problem, not the pass's.
    for (const auto& ip : plan.resolve) {
        try {
            neighbours_.trigger(ip);
        } catch (const Error& e) {
            spdlog::debug("tunnel: {}", e.what());
        }
    }
    if (plan.steps.empty()) {
        memory_ = plan.memory;
        routed_ = plan.routed;
        neighboured_ = plan.neighboured;
        finishPass(plan, "", done);
        return;
    }
    stats_.commandsSent += plan.steps.size();
    auto token = alive_;
    pid_t asked = observed.vswitchdPid;
    ovs_.pipeline(plan.commands(), [this, token, plan, asked, done = std::move(done)](ovs::UnixctlReplies applied) {
        if (!*token) return;
        auto out = settleTunnel(desired_, plan, applied.replies);
        memory_ = out.memory;
        routed_ = out.routed;
        neighboured_ = out.neighboured;
        if (out.refreshed) lastRefresh_ = EventLoop::Clock::now();
        spdlog::debug("tunnel: sent {} commands for {} peers, {} failed", plan.steps.size(), desired_.peerIPs.size(),
                      out.failures);
        std::string error = !applied.unreachable.empty() ? applied.unreachable : out.error;
        if (error.empty() && applied.pid != asked) {
            // Planned against one vswitchd, applied to its successor.
            error = "ovs-vswitchd restarted during the pass (pid " + std::to_string(asked) + " -> " +
                    std::to_string(applied.pid) + ")";
            reconcile();  // in flight: one more pass right after this one
        }
        finishPass(plan, error, done);
    });
}

void TunnelReconciler::finishPass(const TunnelPlan& plan, const std::string& error, const Done& done) {
    stats_.unresolved = plan.unresolved.size();
    if (!error.empty()) return done(ReconcileEngine::Result::failed(error));
    done(plan.unresolved.empty() ? ReconcileEngine::Result::ok() : ReconcileEngine::Result::notYet());
}

}  // namespace kovs::tunnel
