#pragma once
// Keeps TX checksum offload off where the userspace datapath needs it off:
// on host devices (gw0, br-phy, the uplink shim's veth end) and on every pod
// interface; and keeps the host ends of pod veths free of the node's IP stack
// (base/LinkIsolation: pods an older kovs-cni attached). ovs-vswitchd re-creates its tap devices with offload on when it
// restarts or when userspace-tso-enable is toggled, and pods may have been
// created while the agent was down, so the guard, on its ReconcileEngine,
//   - sweeps everything in a full pass (attach(): the start-up sweep; the
//     periodic resync; notifications lost),
//   - checks pods it has not seen yet in a quick pass when the bridge's ports
//     change (a pod another CNI attached gets no kovs-cni ADD unless kovs is
//     chained there), and
//   - re-checks a host device as soon as a RTM_NEWLINK names it.
// Pods are kovs-cni's and other CNIs' alike (offload/PodInterfaces.hpp).
// Every check is offload/OffloadPlan's observe -> plan -> apply (kovsctl
// doctor runs the same plan, dry). Each repair is counted (exported as a
// metric by the agent).
//
// All netns switches are scoped inside one call and return before it does
// (see Netns); call the guard from one thread, the event loop's.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "base/LastError.hpp"
#include "base/NetlinkWatcher.hpp"
#include "base/ReconcileEngine.hpp"
#include "offload/OffloadPlan.hpp"
#include "offload/PodInterfaces.hpp"

namespace kovs::offload {

struct OffloadGuardStats {
    uint64_t sweeps = 0;
    uint64_t checks = 0;
    uint64_t repairs = 0;          // all of them: TX checksum ones are repairs - hostVethRepairs
    uint64_t hostVethRepairs = 0;  // pod veth host ends taken off the node's IP stack
    uint64_t errors = 0;       // a device or netns that could not be checked
    LastError lastError;  // the latest error, logged when it changes
};

class OffloadGuard : public Job {
public:
    using PodLister = std::function<std::vector<PodInterface>()>;

    // hostDevices live in the guard's own netns; `pods` lists pod interfaces
    // at each sweep (empty function: host devices only).
    OffloadGuard(std::vector<std::string> hostDevices, PodLister pods = {});
    ~OffloadGuard() override;
    OffloadGuard(const OffloadGuard&) = delete;
    OffloadGuard& operator=(const OffloadGuard&) = delete;

    // Checks every host device and pod interface; returns the repairs made.
    // A missing device or netns is counted as an error, never thrown: one
    // broken pod must not stop the others from being fixed.
    uint64_t sweep();
    // Checks one host device; true when it had to be repaired.
    bool checkHostDevice(const std::string& name);
    // The bridge's ports changed: pods not seen before are checked shortly
    // (coalesced; needs attach()).
    void portsChanged();

    // Wires the guard to a loop: a sweep now (the start-up sweep), link
    // notifications for the host devices and a sweep every `resync`. The guard
    // must outlive the loop's use of it.
    void attach(EventLoop& loop, std::chrono::milliseconds resync);

    const OffloadGuardStats& stats() const { return stats_; }

    std::string name() const override { return "offload"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;
    const std::set<std::string>& hostDevices() const { return hostDevices_; }

private:
    // Plans from what was observed and applies it; returns the repairs made.
    uint64_t repair(const std::vector<OffloadObservation>& observed);
    void failed(const std::string& what);
    void onLinkEvents(bool overflowed);
    std::vector<PodInterface> listPods();
    void checkNewPods();

    std::set<std::string> hostDevices_;
    PodLister pods_;
    OffloadGuardStats stats_;
    std::set<PodInterface> known_;  // the pods of the last listing
    std::set<std::string> changedHostDevices_;  // seen in the notifications being drained
    std::optional<RtnetlinkSubscription> linkEvents_;
    std::optional<ReconcileEngine> engine_;  // from attach()
};

}  // namespace kovs::offload
