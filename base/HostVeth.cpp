#include "base/HostVeth.hpp"

#include <net/if.h>

#include <fstream>

#include "base/Error.hpp"
#include "base/RtnetlinkClient.hpp"

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
    RtnetlinkClient nl;
    if (!nl.requireLink(name).noArp()) {
        nl.setNoArp(name);
        changed = true;
    }
    return changed;
}

}  // namespace kovs
