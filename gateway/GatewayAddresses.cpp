#include "gateway/GatewayAddresses.hpp"

#include <linux/if_addr.h>

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "base/Error.hpp"
#include "base/Netlink.hpp"
#include "base/RtnetlinkClient.hpp"

namespace kovs::gateway {

GatewayAddresses::GatewayAddresses(std::string name, GatewayAddressPolicy policy)
    : name_(std::move(name)), policy_(std::move(policy)), guarded_(policy_.configured) {}

void GatewayAddresses::reconcile(nl_sock* sock, int ifindex, GatewayRepairs& r) {
    nl_cache* raw = nullptr;
    nl::check(rtnl_addr_alloc_cache(sock, &raw), "gateway guard " + name_ + ": dump addresses");
    nl::Cache cache(raw);
    std::vector<std::pair<IpPrefix, rtnl_addr*>> have;
    for (auto* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
        auto* a = reinterpret_cast<rtnl_addr*>(o);
        if (rtnl_addr_get_ifindex(a) != ifindex) continue;
        auto local = ipFromNlAddr(rtnl_addr_get_local(a));
        if (!local) continue;
        local->prefixLen = static_cast<int>(rtnl_addr_get_prefixlen(a));
        have.emplace_back(*local, a);
    }
    std::vector<IpPrefix> observed;
    for (const auto& [p, _] : have) observed.push_back(p);

    auto plan = planGatewayAddresses(policy_, guarded_, observed);
    if (plan.guarded != guarded_) {
        std::string list;
        for (const auto& a : plan.guarded) list += (list.empty() ? "" : ", ") + a.str();
        spdlog::info("gateway guard {}: keeping the addresses the device was given: {}", name_, list.empty() ? "none yet" : list);
        guarded_ = plan.guarded;
    }

    for (const auto& gone : plan.remove) {
        auto it = std::find_if(have.begin(), have.end(), [&](const auto& h) { return h.first == gone; });
        if (it == have.end()) continue;
        int rc = rtnl_addr_delete(sock, it->second, 0);
        if (rc == -NLE_NOADDR || rc == -NLE_OBJ_NOTFOUND) continue;  // gone meanwhile
        nl::check(rc, "gateway guard " + name_ + ": remove foreign address " + gone.str());
        ++r.addrRemoved;
    }
    for (const auto& want : plan.add) {
        nl::RtAddr a(rtnl_addr_alloc());
        if (!a) throw Error("gateway guard " + name_ + ": rtnl_addr_alloc: out of memory");
        rtnl_addr_set_ifindex(a.get(), ifindex);
        auto local = toNlAddr(want);
        nl::check(rtnl_addr_set_local(a.get(), local.get()), "gateway guard " + name_ + ": address " + want.str());
        rtnl_addr_set_prefixlen(a.get(), want.prefixLen);
        // Duplicate address detection would keep the gateway address tentative
        // (unusable as a source) for a second or more after every repair.
        if (want.family == AF_INET6) rtnl_addr_set_flags(a.get(), IFA_F_NODAD);
        int rc = rtnl_addr_add(sock, a.get(), 0);
        if (rc == -NLE_EXIST) continue;
        nl::check(rc, "gateway guard " + name_ + ": add address " + want.str());
        ++r.addrAdded;
    }
}

}  // namespace kovs::gateway
