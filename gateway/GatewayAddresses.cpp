#include "gateway/GatewayAddresses.hpp"

#include <linux/if_addr.h>

#include <utility>

#include <spdlog/spdlog.h>

namespace kovs::gateway {

GatewayAddresses::GatewayAddresses(std::string name, GatewayAddressPolicy policy)
    : name_(std::move(name)), policy_(std::move(policy)), guarded_(policy_.configured) {}

void GatewayAddresses::reconcile(RtnetlinkClient& nl, GatewayRepairs& r) {
    std::vector<IpPrefix> observed;
    for (const auto& a : nl.addresses(name_)) observed.push_back(a.local);
    auto plan = planGatewayAddresses(policy_, guarded_, observed);
    if (plan.guarded != guarded_) {
        std::string list;
        for (const auto& a : plan.guarded) list += (list.empty() ? "" : ", ") + a.str();
        spdlog::info("gateway guard {}: keeping the addresses the device was given: {}", name_, list.empty() ? "none yet" : list);
        guarded_ = plan.guarded;
    }
    for (const auto& gone : plan.remove) {
        nl.deleteAddress(name_, {.local = gone});  // one gone meanwhile is fine
        ++r.addrRemoved;
    }
    for (const auto& want : plan.add) {
        // Duplicate address detection would keep the gateway address tentative
        // (unusable as a source) for a second or more after every repair.
        if (!nl.addAddress(name_, {.local = want, .flags = want.family == AF_INET6 ? uint32_t(IFA_F_NODAD) : 0u})) continue;
        ++r.addrAdded;
        if (want.family == AF_INET6) ++r.addrAdded6;
    }
}

}  // namespace kovs::gateway
