#include "cni/VethPair.hpp"

#include <linux/if_link.h>

#include <cstdio>

#include "base/Error.hpp"
#include "base/RtnetlinkClient.hpp"
#include "base/LinkIsolation.hpp"
#include "base/Netns.hpp"

namespace kovs::cni {

std::string VethPair::hostNameFor(const std::string& containerId, const std::string& ifname) {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
    for (unsigned char c : containerId + '\0' + ifname) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    char buf[16];
    std::snprintf(buf, sizeof buf, "kovs%011llx", static_cast<unsigned long long>(h & 0xfffffffffffULL));
    return buf;
}

VethEnds VethPair::create(const std::string& hostName, const std::string& podNetns, const std::string& podIfname, int mtu,
                          bool ipv6) {
    auto what = "veth " + hostName + " <-> " + podNetns + ":" + podIfname;
    auto nsFd = Netns::open(podNetns);
    RtnetlinkClient nl;
    // libnl 3.7 cannot carry IFF_UP in a veth NEWLINK (the kernel rejects the
    // request), so both ends are brought up afterwards.
    try {
        nl.createVeth(hostName, podIfname, static_cast<unsigned>(mtu), nsFd.get());
    } catch (const Error& e) {
        throw Error(what + ": " + e.what());
    }
    VethEnds ends{hostName, "", podIfname, ""};
    try {
        ends.hostMac = nl.requireLink(hostName).mac;
        isolateLink(hostName);  // no ARP, no IPv6: the end is OVS's alone
        nl.setUp(hostName, true);
        Netns in(podNetns);
        RtnetlinkClient pod;  // its socket is the pod's namespace's
        ends.podMac = pod.requireLink(podIfname).mac;
        // The pod end's IPv6 link-local from its MAC (modified EUI-64),
        // whatever the namespace's default (stable_privacy, random): the flow
        // table knows a pod's link-local only from its MAC, and drops other
        // sources. Before up: the link-local is made then.
        if (ipv6) pod.setIpv6AddrGenMode(podIfname, IN6_ADDR_GEN_MODE_EUI64);
        pod.setUp(podIfname, true);
    } catch (...) {
        remove(hostName);
        throw;
    }
    return ends;
}

bool VethPair::exists(const std::string& hostName) { return RtnetlinkClient().link(hostName).has_value(); }

bool VethPair::remove(const std::string& hostName) {
    RtnetlinkClient nl;
    if (!nl.link(hostName)) return false;
    nl.deleteLink(hostName);
    return true;
}

}  // namespace kovs::cni
