#include "uplink/UplinkGuard.hpp"

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <spdlog/spdlog.h>

#include <variant>

#include "base/Error.hpp"
#include "base/Strings.hpp"

namespace kovs::uplink {
namespace {

// The interface a route notification is about (its RTA_OIF), 0 when none.
int routeOif(const nlmsghdr* h) {
    const auto* rtm = static_cast<const rtmsg*>(NLMSG_DATA(h));
    int len = static_cast<int>(RTM_PAYLOAD(h));
    for (const auto* a = RTM_RTA(rtm); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= sizeof(int)) return *static_cast<const int*>(RTA_DATA(a));
    }
    return 0;
}

}  // namespace

UplinkGuard::UplinkGuard(EventLoop& loop, UplinkOptions opts, const ovs::OvsdbReplica& replica, RepairLog& log,
                         std::chrono::milliseconds resync)
    : opts_(opts), kernel_(std::move(opts)), replica_(replica), log_(log),
      // A second after the first notification: the notifications of one
      // change share a pass, and a pod's end never races the repair. In
      // kind the DaemonSet's ovs container hands the node's addresses back
      // to eth0 when it gets SIGTERM, and the agent container gets its own
      // SIGTERM at the same moment; a second later the agent's loop has
      // long stopped and the handback is never undone.
      engine_(loop, {.job = "uplink", .resync = resync, .coalesce = std::chrono::seconds(1)},
              [this](bool, ReconcileEngine::Done done) { pass(std::move(done)); }) {
    events_.emplace(
        loop, "uplink: link, address and route notifications",
        std::vector<int>{RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE},
        [this](const nlmsghdr* h) { onMessage(h); },
        [this](bool overflowed) {
            if ((relevant_ || overflowed) && want_) engine_.trigger();
            relevant_ = false;
        });
}

UplinkGuard::~UplinkGuard() = default;

void UplinkGuard::onMessage(const nlmsghdr* h) {
    switch (h->nlmsg_type) {
        case RTM_NEWLINK:
        case RTM_DELLINK: {
            auto name = linkMessageName(h);
            relevant_ |= name == opts_.device || name == opts_.bridge || name == opts_.shimBridgeEnd || name == opts_.shimOvsEnd;
            break;
        }
        case RTM_NEWADDR:
        case RTM_DELADDR:
            relevant_ |= watched_.count(static_cast<int>(static_cast<const ifaddrmsg*>(NLMSG_DATA(h))->ifa_index)) > 0;
            break;
        case RTM_NEWROUTE:
        case RTM_DELROUTE:
            relevant_ |= watched_.count(routeOif(h)) > 0;
            break;
        default: break;
    }
}

void UplinkGuard::start() {
    want_ = desire(opts_, kernel_.observe(&replica_));
    engine_.start();
}

void UplinkGuard::pass(ReconcileEngine::Done done) {
    auto o = kernel_.observe(&replica_);
    watched_.clear();
    for (const auto* l : {&o.device, &o.bridge, &o.shimBridgeEnd, &o.shimOvsEnd}) {
        if (*l) watched_.insert((*l)->index);
    }
    if (!o.device) return done(ReconcileEngine::Result::failed("uplink " + opts_.device + ": no such device"));
    auto plan = planMigration(opts_, *want_, o);
    if (!plan.blocked.empty()) return done(ReconcileEngine::Result::failed(plan.blocked));
    if (plan.converged()) return done(ReconcileEngine::Result::ok());
    if (plan.steps.empty()) return done(ReconcileEngine::Result::notYet());  // waiting for OVS to attach the port
    auto what = join(plan.describeSteps(), "; ");
    if (!engine_.admitRepair(what)) return done(ReconcileEngine::Result::ok());
    spdlog::warn("uplink: {} was changed behind the agent's back; repairing: {}", opts_.device + "/" + opts_.bridge, what);
    bool rebuilt = false;
    for (const auto& s : plan.steps) {
        kernel_.apply(s.action);  // throws naming the step: a failed pass, retried with backoff
        ++repairs_;
        rebuilt |= std::holds_alternative<step::CreateVeth>(s.action);
    }
    if (rebuilt && onShimRebuilt_) onShimRebuilt_(opts_.port());
    lastRepair_ = what;
    log_.record("uplink", what);
    // A repair may take more than one pass (the shim first, then what needs OVS).
    engine_.trigger();
    done(ReconcileEngine::Result::ok());
}

void UplinkGuard::status(nlohmann::json& out) const {
    auto& s = out["uplink"];
    s = {{"mode", modeName(opts_.mode)}, {"device", opts_.device}, {"bridge", opts_.bridge}, {"repairs", repairs_},
         {"lastRepair", lastRepair_}};
    if (want_) {
        auto addresses = nlohmann::json::array();
        for (const auto& a : want_->addresses) addresses.push_back(a.str());
        s["addresses"] = addresses;
    }
    engine_.status(s);
}

void UplinkGuard::metrics(MetricsText& m) const {
    m.counter("kovs_uplink_repairs_total",
              "Steps the uplink job applied after start-up to put the node's underlay identity back on br-phy "
              "(a deleted shim veth, eth0 given the node's address again, br-phy's addresses or routes gone).",
              static_cast<double>(repairs_));
    engine_.metrics(m);
}

}  // namespace kovs::uplink
