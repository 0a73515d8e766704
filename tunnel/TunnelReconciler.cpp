#include "tunnel/TunnelReconciler.hpp"

#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "base/Error.hpp"
#include "base/RtnetlinkClient.hpp"
#include "base/Log.hpp"
#include "base/Strings.hpp"
#include "tunnel/OvsTunnelState.hpp"

namespace kovs::tunnel {

TunnelReconciler::TunnelReconciler(EventLoop& loop, ovs::UnixctlClient& ovs, Underlay& underlay, TunnelReconcilerOptions opts)
    : loop_(loop),
      ovs_(ovs),
      underlay_(underlay),
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
    // A new route (a gateway appeared, a peer's route was deleted) or a
    // neighbour's new MAC (a gateway replaced, announced by gratuitous ARP
    // or unsolicited NA): one pass, at once.
    try {
        kernelWatch_ = std::make_unique<RtnetlinkSubscription>(
            loop_, "tunnel: route and neighbour notifications",
            std::vector<int>{RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, RTNLGRP_NEIGH},
            [this](const nlmsghdr* h) { onKernelMessage(h); },
            [this](bool overflowed) {
                if (!kernelHit_ && !overflowed) return;
                kernelHit_ = false;
                ++stats_.kernelEvents;
                engine_.trigger();
            });
    } catch (const Error& e) {
        spdlog::warn("tunnel: {}; relying on the periodic resync to see route and neighbour changes", e.what());
    }
    engine_.start();
}

void TunnelReconciler::onKernelMessage(const nlmsghdr* h) {
    switch (h->nlmsg_type) {
    case RTM_NEWROUTE:
    case RTM_DELROUTE:
        if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(rtmsg))) {
            const auto* rtm = static_cast<const rtmsg*>(NLMSG_DATA(h));
            // The main table only: the local table changes with every address.
            kernelHit_ |= rtm->rtm_table == RT_TABLE_MAIN;
        }
        break;
    case RTM_NEWNEIGH:
    case RTM_DELNEIGH:
        if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(ndmsg))) {
            const auto* ndm = static_cast<const ndmsg*>(NLMSG_DATA(h));
            // Pods' and gw0's neighbours are no next hop of the tunnel.
            kernelHit_ |= bridgeIndex_ == 0 || ndm->ndm_ifindex == bridgeIndex_;
        }
        break;
    default:
        break;
    }
}

void TunnelReconciler::stop() {
    kernelWatch_.reset();
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
    peersKnown_ = true;
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
    if (opts_.waitForPeers && !peersKnown_) return done(ReconcileEngine::Result::ok());
    // Observed, the kernel's half. br-phy is a vswitchd tap: it is gone
    // while vswitchd restarts, which just means no MACs this pass.
    TunnelObserved kernel;
    observeKernel(underlay_, opts_.bridge, desired_.peerIPs, kernel);
    try {
        auto br = RtnetlinkClient().link(opts_.bridge);
        bridgeIndex_ = br ? br->index : 0;
    } catch (const Error& e) {
        spdlog::debug("tunnel: {}", e.what());
    }
    // Observed, vswitchd's half.
    auto token = alive_;
    ovs_.pipeline(ovsTunnelReadBack(), [this, token, kernel = std::move(kernel), done = std::move(done)](ovs::UnixctlReplies shown) mutable {
        if (!*token) return;
        TunnelObserved observed = std::move(kernel);
        observed.vswitchdPid = shown.pid;
        try {
            observed.ovs = parseOvsTunnelReadBack(shown, opts_.bridge);
        } catch (const Error& e) {
            finishPass(TunnelPlan{}, e.what(), done);
            return;
        }
        observed.refreshDue = EventLoop::Clock::now() - lastRefresh_ >= opts_.neighRefresh;
        applyPlan(observed, std::move(done));
    });
}

void TunnelReconciler::applyPlan(const TunnelObserved& observed, Done done) {
    auto plan = planTunnel(desired_, observed, memory_);
    for (const auto& [ip, problem] : plan.noPath) {
        if (!paths_.count(ip) || paths_[ip].problem != problem) spdlog::warn("tunnel: peer {}: {}", ip, problem);
    }
    paths_ = observed.paths;
    if (auto n = narrowestPath(paths_); n != narrowest_) {
        narrowest_ = n;
        if (onNarrowest_) onNarrowest_(narrowest_);
    }
    if (plan.vswitchdRestarted) {
        ++stats_.vswitchdRestarts;
        spdlog::info("tunnel: ovs-vswitchd restarted (pid {} -> {}); re-programming {} peers", memory_.vswitchdPid,
                     observed.vswitchdPid, desired_.peerIPs.size());
    }
    // The kernel only resolves for traffic: nudge it for next hops it lacks.
    // A peer IP it cannot even send to is that peer's problem, not the pass's.
    for (const auto& ip : plan.resolve) {
        try {
            underlay_.trigger(ip);
        } catch (const Error& e) {
            spdlog::debug("tunnel: {}", e.what());
        }
    }
    // The cover address before the routes that need it (OVS sees it at once).
    try {
        for (const auto& a : plan.coverDelete) {
            underlay_.setAddress(opts_.bridge, a, false);
            spdlog::info("tunnel: removed {} from {}: no next hop needs it any more", a.str(), opts_.bridge);
        }
        if (plan.coverAdd) {
            underlay_.setAddress(opts_.bridge, *plan.coverAdd, true);
            spdlog::info("tunnel: added {} (scope host, noprefixroute) to {}: no address there holds the next hop{} {} "
                         "(OVS 3.1 routes a tunnel only from an address whose prefix holds it)",
                         plan.coverAdd->str(), opts_.bridge, plan.coverHolds.size() > 1 ? "s" : "", join(plan.coverHolds));
        }
    } catch (const Error& e) {
        finishPass(plan, std::string("cover address on ") + opts_.bridge + ": " + e.what(), done);
        return;
    }
    if (plan.steps.empty()) {
        memory_ = plan.memory;
        last_ = plan;
        finishPass(plan, "", done);
        return;
    }
    stats_.commandsSent += plan.steps.size();
    auto token = alive_;
    pid_t asked = observed.vswitchdPid;
    ovs_.pipeline(plan.commands(), [this, token, plan, asked, done = std::move(done)](ovs::UnixctlReplies applied) {
        if (!*token) return;
        auto out = settleTunnel(plan, applied.replies);
        memory_ = out.memory;
        last_ = plan;
        last_.routed = out.routed;
        last_.neighboured = out.neighboured;
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
    stats_.cover = plan.cover ? plan.cover->str() : "";
    stats_.unresolved = plan.unresolved.size();
    stats_.noPath = plan.noPath.size();
    if (!error.empty()) return done(ReconcileEngine::Result::failed(error));
    // A peer with no MAC or no route yet: retried with backoff, not a failure.
    done(plan.unresolved.empty() && plan.noPath.empty() ? ReconcileEngine::Result::ok() : ReconcileEngine::Result::notYet());
}

}  // namespace kovs::tunnel
