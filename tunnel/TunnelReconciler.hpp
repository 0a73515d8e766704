#pragma once
// Keeps ovs-vswitchd's tunnel underlay state in line with the peer set: for
// each peer a host route `ovs/route/add <ip>/32 <bridge>` and a neighbour
// `tnl/neigh/set <bridge> <ip> <mac>` (so the first packet to a new peer is
// not lost to OVS's own ARP), all pipelined over one unixctl connection.
//
// Both live only in vswitchd's memory, so every pass reads them back
// (`ovs/route/show`, `tnl/neigh/show`) and repairs the difference; a new
// vswitchd pid (its pidfile is watched with inotify) just means an empty
// read-back and therefore a full re-program. Neighbours are re-set every
// `neighRefresh`, well before OVS ages them out (tnl/neigh/aging, 900 s).
//
// OVS 3.1 has no per-entry tnl/neigh delete: when a peer we programmed
// leaves, the pass issues `tnl/neigh/flush` followed, in the same pipeline,
// by a `tnl/neigh/set` for every remaining peer, so the window without
// entries is one round trip of a single batch. Every user host route
// (/32, /128) on the bridge is treated as ours: the agent owns br-phy.
//
// Peers are assumed on-link with the bridge's subnet (kind's Docker network);
// routed underlays would need `gw` and the gateway's MAC.
#include <chrono>
#include <map>
#include <set>
#include <string>

#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "base/UniqueFd.hpp"
#include "ovs/UnixctlClient.hpp"
#include "tunnel/NeighbourTable.hpp"
#include "peers/Peer.hpp"

namespace kovs::tunnel {

struct TunnelReconcilerOptions {
    std::string bridge = "br-phy";
    std::chrono::milliseconds resync{std::chrono::seconds(10)};
    std::chrono::milliseconds neighRefresh{std::chrono::minutes(5)};
    // First retry after a failed pass or an unresolved MAC; doubles up to `resync`.
    std::chrono::milliseconds retryInitial{50};
};

class TunnelReconciler : public Job {
public:
    struct Stats {
        size_t peers = 0;
        size_t unresolved = 0;         // peers whose MAC is not known yet
        size_t vswitchdRestarts = 0;   // restarts seen (each one re-programs everything)
        uint64_t passes = 0;
        uint64_t commandsSent = 0;
        std::string lastError;         // empty after a clean pass
    };

    TunnelReconciler(EventLoop& loop, UnixctlClient& ovs, NeighbourTable& neighbours, TunnelReconcilerOptions opts);
    ~TunnelReconciler() override;
    TunnelReconciler(const TunnelReconciler&) = delete;
    TunnelReconciler& operator=(const TunnelReconciler&) = delete;

    // Starts the periodic resync and the pidfile watch, and runs a first pass.
    void start();
    void stop();

    // The PeerSource callback: runs a pass right away.
    void setPeers(const PeerSet& peers);

    // One pass now. Never throws: a failure is logged, kept in stats() and
    // retried with backoff.
    void reconcile();

    const Stats& stats() const { return stats_; }
    // Whether vswitchd holds a route / a neighbour entry for this peer IP, as
    // of the last pass (read back, plus the commands of that pass that succeeded).
    bool hasRoute(const std::string& ip) const { return routed_.count(ip) > 0; }
    bool hasNeighbour(const std::string& ip) const { return neighboured_.count(ip) > 0; }

    // Section "tunnel"; the per-peer state is in PeerFanout's "peers".
    std::string name() const override { return "tunnel"; }
    void status(nlohmann::json& out) const override {
        out["tunnel"] = {{"bridge", opts_.bridge}, {"unresolved", stats_.unresolved}, {"commandsSent", stats_.commandsSent},
                         {"vswitchdRestarts", stats_.vswitchdRestarts}, {"lastError", stats_.lastError}};
    }
    void metrics(MetricsText& m) const override {
        m.counter("kovs_tunnel_commands_total", "unixctl commands sent to program peers.", static_cast<double>(stats_.commandsSent));
        m.counter("kovs_vswitchd_restarts_seen_total", "ovs-vswitchd restarts seen by the tunnel job.",
                  static_cast<double>(stats_.vswitchdRestarts));
    }

private:
    void pass();  // throws
    void schedule(std::chrono::milliseconds delay);
    void onPidfileEvent();

    EventLoop& loop_;
    UnixctlClient& ovs_;
    NeighbourTable& neighbours_;
    TunnelReconcilerOptions opts_;

    PeerSet peers_;
    std::map<std::string, std::string> macs_;  // peer ip -> last MAC seen in the kernel
    std::set<std::string> ownedNeighbours_;
    std::set<std::string> formerPeers_;         // ips of peers that left (their entries must go)
    std::set<std::string> routed_;
    std::set<std::string> neighboured_;    // ips we tnl/neigh/set in this vswitchd
    pid_t programmedPid_ = -1;
    EventLoop::Clock::time_point lastRefresh_{};
    std::chrono::milliseconds retry_;
    bool started_ = false;
    EventLoop::TimerId timer_ = 0;
    UniqueFd inotify_;
    Stats stats_;
};

}  // namespace kovs::tunnel
