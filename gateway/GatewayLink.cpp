#include "gateway/GatewayLink.hpp"

#include <spdlog/spdlog.h>


namespace kovs::gateway {

GatewayLink::GatewayLink(EventLoop& loop, std::string name, std::optional<int> mtu, std::function<void()> reconcile)
    : loop_(loop), name_(std::move(name)), mtu_(mtu), reconcile_(std::move(reconcile)) {}

GatewayLink::~GatewayLink() {
    if (mtuHeldTimer_) loop_.cancel(*mtuHeldTimer_);
}

void GatewayLink::reconcile(RtnetlinkClient& nl, const LinkInfo& link, GatewayRepairs& r) {
    if (mtu_ && link.mtu != static_cast<unsigned>(*mtu_)) {
        if (mtuChanged_) {
            nl.setMtu(name_, static_cast<unsigned>(*mtu_));
            spdlog::info("gateway guard {}: MTU {} -> {}", name_, link.mtu, *mtu_);
        } else if (admitMtuRepair(link.mtu, r)) {
            nl.setMtu(name_, static_cast<unsigned>(*mtu_));
            ++r.mtu;
        }
    }
    mtuChanged_ = false;
    if (!link.up()) {
        nl.setUp(name_, true);
        ++r.linkUp;
    }
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
