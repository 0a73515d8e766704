#pragma once
// The gateway guard's link step: gw0 up, and at its MTU when one is wanted:
// kovs's own gw0 (whose mtu_request the bridge job sets, so OVS agrees) or a
// configured gateway.mtu. Another CNI's device keeps the MTU that CNI gave it.
//
// A value that keeps being changed under the guard is another writer
// (ovs-vswitchd resets an internal port without mtu_request to the bridge's
// smallest MTU): every MTU repair passes a RepairThrottle, a held-back one
// runs on a pass of its own when its wait is over, and the guard's status
// says the MTU is contested.
#include <functional>
#include <optional>
#include <string>

#include "base/EventLoop.hpp"
#include "base/RepairThrottle.hpp"
#include "base/RtnetlinkClient.hpp"
#include "gateway/GatewayRepairs.hpp"


namespace kovs::gateway {

class GatewayLink {
public:
    // `mtu`: none leaves the device's MTU as it is. `reconcile` runs a pass
    // of the guard (when a held-back MTU repair is due), on `loop`.
    GatewayLink(EventLoop& loop, std::string name, std::optional<int> mtu, std::function<void()> reconcile);
    ~GatewayLink();
    GatewayLink(const GatewayLink&) = delete;
    GatewayLink& operator=(const GatewayLink&) = delete;

    // `link`: gw0 as the kernel reported it just now, changed through `sock`.
    void reconcile(RtnetlinkClient& nl, const LinkInfo& link, GatewayRepairs& r);
    bool mtuContested() const { return mtuThrottle_.contested(); }
    // A new MTU to keep: set on the next pass, as a change, not a repair.
    void setMtu(int mtu) {
        mtu_ = mtu;
        mtuChanged_ = true;
    }

private:
    bool admitMtuRepair(unsigned observed, GatewayRepairs& r);

    EventLoop& loop_;
    std::string name_;
    std::optional<int> mtu_;
    std::function<void()> reconcile_;
    RepairThrottle mtuThrottle_;
    std::optional<EventLoop::TimerId> mtuHeldTimer_;
    bool mtuAdmitted_ = false;  // the throttle's wait is over: repair on this pass
    bool mtuChanged_ = false;   // setMtu since the last pass
};

}  // namespace kovs::gateway
