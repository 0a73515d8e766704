#pragma once
// The uplink job after start-up: keeps the node as Uplink::migrate() left it.
// Behind the agent's back the shim's veth can be deleted, eth0 can get the
// node's address again (a DHCP client, networkd, a person), br-phy can lose
// its addresses or routes; each cuts the node off or splits its identity in
// two. Every pass is the migration's own observe -> plan -> apply
// (UplinkKernel, planMigration) towards the desired state taken right after
// the migration, so nothing the planner would not do at start-up is ever
// done here. It runs on its ReconcileEngine: link, address and route
// notifications of eth0, br-phy and the shim's veth ends trigger it, the
// resync backs them up, a step that fails is a failed pass (retried with
// backoff), and repairs of drift go through the engine's repair throttle: a
// writer that keeps putting eth0's address back is reported as contested,
// never fought in a loop.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "base/NetlinkWatcher.hpp"
#include "base/ReconcileEngine.hpp"
#include "base/RepairLog.hpp"
#include "ovs/OvsdbReplica.hpp"
#include "uplink/UplinkKernel.hpp"
#include "uplink/UplinkOptions.hpp"
#include "uplink/UplinkPlanner.hpp"

namespace kovs::uplink {

class UplinkGuard : public Job {
public:
    // `replica` (the agent's OVSDB replica) and `log` must outlive the guard.
    UplinkGuard(EventLoop& loop, UplinkOptions opts, const ovs::OvsdbReplica& replica, RepairLog& log,
                std::chrono::milliseconds resync);
    ~UplinkGuard() override;
    UplinkGuard(const UplinkGuard&) = delete;
    UplinkGuard& operator=(const UplinkGuard&) = delete;

    // Once migrate() converged: takes the desired state from what the node
    // shows now (the record, trusted while br-phy holds its addresses) and
    // starts the passes. Throws kovs::Error when there is none to take.
    void start();

    // Called with the uplink port's name after a repair rebuilt the shim's
    // veth: vswitchd must open the new device (BridgeReconciler::reattach).
    void setShimRebuiltHandler(std::function<void(const std::string& port)> h) { onShimRebuilt_ = std::move(h); }

    uint64_t repairs() const { return repairs_; }

    std::string name() const override { return "uplink"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;

private:
    void pass(ReconcileEngine::Done done);
    void onMessage(const struct nlmsghdr* h);

    UplinkOptions opts_;
    UplinkKernel kernel_;
    const ovs::OvsdbReplica& replica_;
    RepairLog& log_;
    std::optional<UplinkDesired> want_;
    std::set<int> watched_;  // ifindex of eth0, br-phy and the shim's ends, as last observed
    bool relevant_ = false;  // the notifications being drained named one of them
    uint64_t repairs_ = 0;   // steps applied
    std::string lastRepair_;
    std::function<void(const std::string&)> onShimRebuilt_;
    ReconcileEngine engine_;
    std::optional<RtnetlinkSubscription> events_;  // last: its callbacks use the members above
};

}  // namespace kovs::uplink
