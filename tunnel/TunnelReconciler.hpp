#pragma once
// The tunnel job: keeps ovs-vswitchd's per-peer underlay state (a host route
// and a tunnel neighbour per peer, see TunnelPlanner) in line with the peer
// set. Each pass reads top to bottom as desired (the peers) -> observed
// (the kernel's neighbour MACs, `ovs/route/show` + `tnl/neigh/show`) -> plan
// (planTunnel) -> apply (one unixctl pipeline) -> settle (settleTunnel).
//
// Everything vswitchd is asked happens asynchronously on the loop, with the
// unixctl client's per-request timeout: a stopped or hung vswitchd makes a
// pass fail (and the job's ReconcileEngine retry it with backoff), never
// blocks the loop. One pass at a time; a trigger during a pass runs another
// one right after it.
//
// Both entries live only in vswitchd's memory, so every pass reads them
// back and repairs the difference; a new vswitchd (its pidfile is watched)
// means an empty read-back and a full re-program at once. Neighbours are
// re-set every `neighRefresh`. The kernel's routes and neighbours decide each
// peer's next hop and its MAC: a route or neighbour notification (main
// table; neighbours on the bridge) runs a pass, so a new gateway or a
// gateway's new MAC reaches vswitchd within one pass of the kernel learning it.
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "base/DirectoryWatch.hpp"
#include "base/EventLoop.hpp"
#include "base/NetlinkWatcher.hpp"
#include "base/Job.hpp"
#include "base/ReconcileEngine.hpp"
#include "ovs/UnixctlClient.hpp"
#include "peers/Peer.hpp"
#include "tunnel/Underlay.hpp"
#include "tunnel/TunnelPlanner.hpp"

namespace kovs::tunnel {

struct TunnelReconcilerOptions {
    std::string bridge = "br-phy";
    std::chrono::milliseconds resync{std::chrono::seconds(10)};
    std::chrono::milliseconds neighRefresh{std::chrono::minutes(5)};
    // First retry after a failed pass or an unresolved MAC; doubles up to `resync`.
    std::chrono::milliseconds retryInitial{50};
    // The peers come from a source: vswitchd is left as it is until its
    // first list (with none yet, every peer's route would look stale and be
    // deleted, cutting the node off for as long as the list takes).
    bool waitForPeers = false;
};

class TunnelReconciler : public Job {
public:
    struct Stats {
        size_t peers = 0;
        size_t unresolved = 0;        // peers whose next hop's MAC is not known yet
        size_t noPath = 0;            // peers the kernel has no route to
        uint64_t kernelEvents = 0;    // route and neighbour notifications that ran a pass
        std::string cover;            // the cover address on the bridge (isCoverAddress), "" none
        size_t vswitchdRestarts = 0;  // restarts seen (each one re-programs everything)
        uint64_t passes = 0;          // passes completed
        uint64_t commandsSent = 0;
        std::string lastError;        // empty after a clean pass
    };

    TunnelReconciler(EventLoop& loop, ovs::UnixctlClient& ovs, Underlay& underlay, TunnelReconcilerOptions opts);
    ~TunnelReconciler() override;
    TunnelReconciler(const TunnelReconciler&) = delete;
    TunnelReconciler& operator=(const TunnelReconciler&) = delete;

    // Starts the periodic resync, the pidfile and kernel watches, and runs a first pass.
    void start();
    void stop();

    // The PeerSource callback: runs a pass right away.
    void setPeers(const peers::PeerSet& peers);

    // Runs a pass now, or right after the one in flight. Never throws: a
    // failure is logged, kept in stats() and retried with backoff.
    void reconcile() { engine_.runNow(); }
    // For --once: triggers a pass and runs the loop until it completed;
    // false when it did not within `timeout` or failed (stats().lastError).
    bool reconcileOnce(std::chrono::milliseconds timeout);
    bool passInFlight() const { return engine_.passInFlight(); }

    Stats stats() const;
    // Whether vswitchd holds the route / a neighbour entry for this peer IP,
    // as of the last pass (read back, plus that pass's commands that succeeded).
    bool hasRoute(const std::string& ip) const { return last_.hasRoute(ip); }
    bool hasNeighbour(const std::string& ip) const { return last_.hasNeighbour(ip); }
    // How the kernel reached the peer at the last pass ({} before the first).
    PeerPath pathOf(const std::string& ip) const {
        auto p = paths_.find(ip);
        return p == paths_.end() ? PeerPath{} : p->second;
    }

    // Called on the loop after each pass that changed the narrowest path to
    // the peers (status: tunnel.narrowestPath).
    void setNarrowestPathHandler(std::function<void(const NarrowestPath&)> h) { onNarrowest_ = std::move(h); }

    // Section "tunnel"; the per-peer state is in PeerFanout's "peers".
    std::string name() const override { return "tunnel"; }
    void status(nlohmann::json& out) const override {
        out["tunnel"] = {{"bridge", opts_.bridge}, {"unresolved", stats_.unresolved}, {"noPath", stats_.noPath},
                         {"kernelEvents", stats_.kernelEvents}, {"commandsSent", stats_.commandsSent},
                         {"vswitchdRestarts", stats_.vswitchdRestarts}, {"lastError", engine_.lastError()}};
        // The /0 address OVS 3.1 needs on a bridge whose prefixes hold no next hop (isCoverAddress).
        if (!stats_.cover.empty()) out["tunnel"]["coverAddress"] = stats_.cover;
        if (narrowest_.mtu) out["tunnel"]["narrowestPath"] = {{"peer", narrowest_.peer}, {"mtu", narrowest_.mtu}};
        engine_.status(out["tunnel"]);
    }
    void metrics(MetricsText& m) const override {
        m.counter("kovs_tunnel_commands_total", "unixctl commands sent to program peers.", static_cast<double>(stats_.commandsSent));
        m.counter("kovs_vswitchd_restarts_seen_total", "ovs-vswitchd restarts seen by the tunnel job.",
                  static_cast<double>(stats_.vswitchdRestarts));
        m.gauge("kovs_tunnel_peers_unprogrammed", "Peers the tunnel job cannot program yet, by reason.",
                static_cast<double>(stats_.noPath), {{"reason", "no_route"}});
        m.gauge("kovs_tunnel_peers_unprogrammed", "Peers the tunnel job cannot program yet, by reason.",
                static_cast<double>(stats_.unresolved), {{"reason", "unresolved"}});
        engine_.metrics(m);
    }

private:
    using Done = ReconcileEngine::Done;
    void pass(Done done);
    void applyPlan(const TunnelObserved& observed, Done done);
    void finishPass(const TunnelPlan& plan, const std::string& error, const Done& done);
    void onKernelMessage(const struct nlmsghdr* h);

    EventLoop& loop_;
    ovs::UnixctlClient& ovs_;
    Underlay& underlay_;
    TunnelReconcilerOptions opts_;

    TunnelDesired desired_;
    bool peersKnown_ = false;
    TunnelMemory memory_;
    TunnelPlan last_;  // routed, neighboured and hops as of the last pass (settled)
    std::map<std::string, PeerPath> paths_;
    NarrowestPath narrowest_;
    std::function<void(const NarrowestPath&)> onNarrowest_;
    int bridgeIndex_ = 0;     // br-phy's ifindex at the last pass; 0 unknown
    bool kernelHit_ = false;  // this wake-up saw a route or neighbour message that matters
    EventLoop::Clock::time_point lastRefresh_{};

    ReconcileEngine engine_;
    std::unique_ptr<DirectoryWatch> pidfileWatch_;
    std::unique_ptr<RtnetlinkSubscription> kernelWatch_;
    Stats stats_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace kovs::tunnel
