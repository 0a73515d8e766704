#include "gateway/GatewayLink.hpp"

#include <net/if.h>

#include <spdlog/spdlog.h>

#include "base/Error.hpp"
#include "base/Netlink.hpp"

namespace kovs::gateway {

GatewayLink::GatewayLink(EventLoop& loop, std::string name, std::optional<int> mtu, std::function<void()> reconcile)
    : loop_(loop), name_(std::move(name)), mtu_(mtu), reconcile_(std::move(reconcile)) {}

GatewayLink::~GatewayLink() {
    if (mtuHeldTimer_) loop_.cancel(*mtuHeldTimer_);
}

void GatewayLink::reconcile(nl_sock* sock, rtnl_link* link, GatewayRepairs& r) {
    bool up = (rtnl_link_get_flags(link) & IFF_UP) != 0;
    unsigned mtu = rtnl_link_get_mtu(link);
    bool fixMtu = mtu_ && mtu != static_cast<unsigned>(*mtu_) && admitMtuRepair(mtu, r);
    if (up && !fixMtu) return;
    nl::Link change(rtnl_link_alloc());
    if (!change) throw Error("gateway guard " + name_ + ": rtnl_link_alloc: out of memory");
    if (fixMtu) rtnl_link_set_mtu(change.get(), static_cast<unsigned>(*mtu_));
    if (!up) rtnl_link_set_flags(change.get(), IFF_UP);
    nl::check(rtnl_link_change(sock, link, change.get(), 0),
              "gateway guard " + name_ + ": set " + (up ? "" : "up ") + (fixMtu ? "mtu " + std::to_string(*mtu_) : ""));
    r.linkUp += up ? 0 : 1;
    r.mtu += fixMtu ? 1 : 0;
}

// Every MTU repair passes the throttle: a few at once, then each held back
// twice as long as the last while the MTU keeps changing under the guard.
bool GatewayLink::admitMtuRepair(unsigned observed, GatewayRepairs& r) {
    if (mtuHeldTimer_) return false;  // a held-back repair is pending; it runs that pass
    if (mtuAdmitted_) {
        mtuAdmitted_ = false;
        return true;
    }
    auto wait = mtuThrottle_.admit();
    if (wait.count() == 0) return true;
    spdlog::warn("gateway guard {}: MTU changed under the guard {} times in {} s (now {}, kept at {}): another writer sets "
                 "it (ovs-vswitchd gives an internal port without mtu_request the bridge's smallest MTU); repairing in {} ms",
                 name_, mtuThrottle_.inWindow(), mtuThrottle_.window().count() / 1000, observed, *mtu_, wait.count());
    ++r.mtuHeld;
    mtuHeldTimer_ = loop_.after(wait, [this] {
        mtuHeldTimer_.reset();
        mtuAdmitted_ = true;
        reconcile_();
    });
    return false;
}

}  // namespace kovs::gateway
