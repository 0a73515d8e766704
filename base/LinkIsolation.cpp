#include "base/LinkIsolation.hpp"

#include <net/if.h>

#include <fstream>

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

}  // namespace

bool linkIsolated(const std::string& name) {
    return RtnetlinkClient().requireLink(name).noArp() && ipv6Disabled(disableIpv6Sysctl(name));
}

bool isolateLink(const std::string& name) {
    bool changed = false;
    const std::string sysctl = disableIpv6Sysctl(name);
    if (!ipv6Disabled(sysctl)) {
        std::ofstream out(sysctl);
        out << "1\n";
        out.close();
        if (!out) throw Error("link " + name + ": cannot disable IPv6");
        changed = true;
    }
    RtnetlinkClient nl;
    if (!nl.requireLink(name).noArp()) {
        nl.setNoArp(name);
        changed = true;
    }
    return changed;
}

}  // namespace kovs
