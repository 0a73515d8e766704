#include "base/HostVeth.hpp"

#include <net/if.h>

#include <fstream>

#include "base/Error.hpp"
#include "base/Netlink.hpp"

namespace kovs {

bool isolateHostVeth(const std::string& name) {
    bool changed = false;
    // Before the link goes up, so it never gets an IPv6 link-local address.
    const std::string sysctl = "/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6";
    std::string value;
    if (std::ifstream in(sysctl); in >> value && value != "1") {  // no file: IPv6 is off on this node
        std::ofstream out(sysctl);
        out << "1\n";
        out.close();
        if (!out) throw Error("link " + name + ": cannot disable IPv6");
        changed = true;
    }
    auto sock = nl::connectRoute();
    rtnl_link* raw = nullptr;
    nl::check(rtnl_link_get_kernel(sock.get(), 0, name.c_str(), &raw), "link " + name + ": get");
    nl::Link current(raw);
    if (!(rtnl_link_get_flags(current.get()) & IFF_NOARP)) {
        nl::Link change(rtnl_link_alloc());
        rtnl_link_set_flags(change.get(), IFF_NOARP);
        nl::check(rtnl_link_change(sock.get(), current.get(), change.get(), 0), "link " + name + ": set noarp");
        changed = true;
    }
    return changed;
}

}  // namespace kovs
