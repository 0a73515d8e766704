#include "base/LinkAddresses.hpp"

#include <net/if.h>

#include <cstring>

#include "base/Netlink.hpp"

namespace kovs {

std::vector<IpPrefix> linkAddresses(const std::string& ifname) {
    std::vector<IpPrefix> out;
    int ifindex = static_cast<int>(::if_nametoindex(ifname.c_str()));
    if (ifindex == 0) return out;
    auto sock = nl::connectRoute();
    nl_cache* raw = nullptr;
    nl::check(rtnl_addr_alloc_cache(sock.get(), &raw), "addresses of " + ifname);
    nl::Cache cache(raw);
    for (auto* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
        auto* a = reinterpret_cast<rtnl_addr*>(o);
        if (rtnl_addr_get_ifindex(a) != ifindex) continue;
        auto* local = rtnl_addr_get_local(a);
        int family = local ? nl_addr_get_family(local) : AF_UNSPEC;
        if (family != AF_INET && family != AF_INET6) continue;
        IpPrefix p;
        p.family = family;
        if (nl_addr_get_len(local) != p.size()) continue;
        std::memcpy(p.bytes.data(), nl_addr_get_binary_addr(local), p.size());
        p.prefixLen = static_cast<int>(rtnl_addr_get_prefixlen(a));
        if (family == AF_INET6 && p.bytes[0] == 0xfe && (p.bytes[1] & 0xc0) == 0x80) continue;
        out.push_back(p);
    }
    return out;
}

}  // namespace kovs
