#include "base/LinkIsolation.hpp"

#include <linux/if_link.h>
#include <net/if.h>
#include <sys/socket.h>

#include <fstream>
#include <vector>

#include "base/Error.hpp"
#include "base/RtnetlinkClient.hpp"

namespace kovs {

namespace {

std::string disableIpv6Sysctl(const std::string& name) { return "/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6"; }

// No file: IPv6 is off on this node, which is as good.
bool ipv6Disabled(const std::string& sysctl) {
    std::string value;
    std::ifstream in(sysctl);
    return !(in >> value) || value == "1";
}

std::vector<AddressInfo> ipv6Addresses(RtnetlinkClient& nl, const std::string& name) {
    std::vector<AddressInfo> out;
    for (const auto& a : nl.addresses(name))
        if (a.local.family == AF_INET6) out.push_back(a);
    return out;
}

// Where /proc/sys cannot be written (kovs's agent pod is not privileged, and
// the runtime mounts /proc/sys read-only for it): the link keeps IPv6 but
// never makes an address (addrgenmode none), and any it made is removed.
// Without an address on the link the kernel answers no neighbour
// solicitation there (it looks the target up on the receiving link alone)
// and sends nothing from it. Returns whether it removed an address (the
// mode is set again each time: one idempotent request).
bool noIpv6Addresses(RtnetlinkClient& nl, const std::string& name, const std::string& sysctl) {
    bool removed = false;
    try {
        nl.setIpv6AddrGenMode(name, IN6_ADDR_GEN_MODE_NONE);
        for (const auto& a : ipv6Addresses(nl, name)) {
            nl.deleteAddress(name, a);
            removed = true;
        }
    } catch (const std::exception& e) {
        throw Error("link " + name + ": cannot disable IPv6 (" + sysctl + " is not writable) nor keep it without addresses: " + e.what());
    }
    return removed;
}

}  // namespace

// With IPv6 on (only where /proc/sys could not be written), a link with no
// IPv6 address counts as isolated: see noIpv6Addresses.
bool linkIsolated(const std::string& name) {
    RtnetlinkClient nl;
    return nl.requireLink(name).noArp() && (ipv6Disabled(disableIpv6Sysctl(name)) || ipv6Addresses(nl, name).empty());
}

bool isolateLink(const std::string& name) {
    bool changed = false;
    RtnetlinkClient nl;
    const std::string sysctl = disableIpv6Sysctl(name);
    if (!ipv6Disabled(sysctl)) {
        std::ofstream out(sysctl);
        out << "1\n";
        out.close();
        changed = out ? true : noIpv6Addresses(nl, name, sysctl);
    }
    if (!nl.requireLink(name).noArp()) {
        nl.setNoArp(name);
        changed = true;
    }
    return changed;
}

}  // namespace kovs
