#include "base/LinkAddresses.hpp"

#include "base/RtnetlinkClient.hpp"

namespace kovs {

std::vector<IpPrefix> linkAddresses(const std::string& ifname) {
    std::vector<IpPrefix> out;
    RtnetlinkClient nl;
    if (!nl.link(ifname)) return out;
    for (const auto& a : nl.addresses(ifname)) {
        const auto& p = a.local;
        if (p.family == AF_INET6 && p.bytes[0] == 0xfe && (p.bytes[1] & 0xc0) == 0x80) continue;
        out.push_back(p);
    }
    return out;
}

}  // namespace kovs
