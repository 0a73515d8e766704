#pragma once
// Keeps the gateway interface (gw0) as configured: present links are brought
// up, get their MTU back, exactly their configured addresses and their routes
// (the pod-CIDR route the kernel adds with each address, plus extra routes).
// rtnetlink notifications about gw0 trigger one coalesced reconcile; a
// periodic resync backs them up, because the kernel sends no RTM_DELROUTE for
// routes removed along with an address or when a link goes down.
//
// This is the job; when it runs (notifications coalesced, resync, retries
// with backoff, failures logged once a streak) is its ReconcileEngine's. Each
// pass finds gw0 and runs one step per kind of kernel object, in this order
// (each step's header says what it keeps and why):
//   gateway/GatewayLink       up, MTU (with the MTU-repair throttle)
//   gateway/GatewaySysctls    rp_filter, send_redirects; IPv6 forwarding, accept_ra
//   gateway/GatewayAddresses  addresses (plan: gateway/GatewayAddressPlan)
//   gateway/GatewayRoutes     routes (plan: gateway/GatewayRoutePlan)
// A missing gw0 is not created (the bridge reconciler owns the OVS port);
// the guard waits for a link message carrying its name.
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/EventLoop.hpp"
#include "base/IpPrefix.hpp"
#include "base/Job.hpp"
#include "base/Metrics.hpp"
#include "base/ReconcileEngine.hpp"
#include "base/RtnetlinkClient.hpp"
#include "base/NetlinkWatcher.hpp"
#include "gateway/GatewayAddresses.hpp"
#include "gateway/GatewayLink.hpp"
#include "gateway/GatewayRoutes.hpp"
#include "gateway/GatewaySysctls.hpp"

namespace kovs::gateway {

struct GatewayGuardOptions {
    bool enabled = true;
    std::string name = "gw0";       // antrea-gw0 and other names work the same
    std::optional<int> mtu = 1450;  // none: the device's MTU is left as it is
    std::vector<IpPrefix> addresses;  // e.g. gatewayAddressFor(podCidr), IPv4 and/or IPv6
    // With no addresses: keep the ones the device is given (another CNI's).
    bool adoptAddresses = false;
    // rp_filter loose and send_redirects off, which kovs's own Service reply
    // path needs (standalone mode); another CNI's device keeps its sysctls.
    bool serviceSysctls = true;
    std::vector<RouteInfo> routes;  // by destination and next hop (desiredGatewayRoutes)
    // false until the full route set is known (the agent's peers have not
    // arrived yet): kovs routes on gw0 missing from `routes` are kept, not
    // removed, until the first setRoutes(). An agent restart must not cut the
    // node off from remote pods while the API server is slow or away.
    bool routesComplete = true;
    std::chrono::milliseconds resyncInterval{10'000};
    // Events arriving within this delay share one reconcile.
    std::chrono::milliseconds coalesceDelay{1};
};

struct GatewayGuardStats {
    uint64_t reconciles = 0;
    uint64_t linkUp = 0;
    uint64_t mtuFixed = 0;
    uint64_t addressesAdded = 0;
    uint64_t addressesRemoved = 0;
    uint64_t routesAdded = 0;
    uint64_t routesRemoved = 0;
    uint64_t addressesAdded6 = 0;  // the IPv6 ones among addressesAdded and routesAdded
    uint64_t routesAdded6 = 0;
    uint64_t sysctlsFixed = 0;   // rp_filter, send_redirects, IPv6 forwarding and accept_ra
    uint64_t mtuHeld = 0;        // MTU repairs the throttle held back
    bool mtuContested = false;   // the MTU keeps being changed under the guard
    uint64_t failures = 0;       // reconciles that failed (gw0 changed under them, or an error); retried
    uint64_t restores = 0;       // reconciles that repaired something
    bool linkPresent = false;
    // From the first notification of the damage to the end of the repair
    // (from the start of the reconcile when a resync found the damage).
    std::chrono::nanoseconds lastRestore{0};
    std::chrono::nanoseconds maxRestore{0};
    std::chrono::nanoseconds totalRestore{0};  // sum over `restores`, for an average / Prometheus _sum
    NetlinkWatcher::Counters events;
};

class GatewayGuard : public Job {
public:
    // Validates the options (throws kovs::Error naming the bad value, with no
    // state changed) and, when enabled, subscribes and schedules a first
    // reconcile on `loop`. Must be created and destroyed on the loop's thread.
    GatewayGuard(EventLoop& loop, GatewayGuardOptions options);
    ~GatewayGuard() override;
    GatewayGuard(const GatewayGuard&) = delete;
    GatewayGuard& operator=(const GatewayGuard&) = delete;

    // Thread-safe snapshot, for metrics and tests.
    GatewayGuardStats stats() const;

    // Runs a reconcile now (on the loop thread).
    void reconcileNow();

    // Replaces the extra routes (peers' pod CIDRs come and go at runtime) and
    // schedules a reconcile. Routes kovs added that are no longer wanted go.
    void setRoutes(std::vector<RouteInfo> routes);
    // A new MTU for the gateway (the agent follows the narrowest path to the
    // peers) and a pass; an MTU out of 68..65535 throws kovs::Error, changing nothing.
    void setMtu(int mtu);
    // Runs on the loop after each repair, with its duration.
    void setRestoreHandler(std::function<void(std::chrono::nanoseconds)> h) { onRestore_ = std::move(h); }

    std::string name() const override { return "gateway"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;
    std::string notReady() const override;

private:
    void pass();
    void record(const GatewayRepairs& r, bool present, bool repaired, std::chrono::nanoseconds took);

    EventLoop& loop_;
    GatewayGuardOptions opt_;
    // Requests and dumps of every step, on its one socket; not opened when disabled.
    std::optional<RtnetlinkClient> nl_;
    std::optional<NetlinkWatcher> watcher_;
    GatewayLink link_;
    GatewaySysctls sysctls_;
    GatewayAddresses addresses_;
    std::optional<EventLoop::Clock::time_point> damageSeen_;

    std::function<void(std::chrono::nanoseconds)> onRestore_;
    mutable std::mutex statsMutex_;
    GatewayGuardStats stats_;
    LatencyHistogram restoreLatency_;
    ReconcileEngine engine_;  // last: its first pass runs in the constructor
};

}  // namespace kovs::gateway
