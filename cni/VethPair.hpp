#pragma once
// The pod's veth pair over rtnetlink. The container end is created directly
// inside the pod netns under its final name (IFLA_NET_NS_FD on the peer), so
// there is no moment where a half-made interface sits in the host namespace
// under a temporary name, and a name clash in the pod fails before anything exists.
#include <string>

namespace kovs::cni {

struct VethEnds {
    std::string hostName;
    std::string hostMac;
    std::string podName;
    std::string podMac;
};

class VethPair {
public:
    // "kovs" + 11 hex digits of a hash of (containerId, ifname): stable across
    // ADD/DEL/CHECK/GC, unique per attachment, and within IFNAMSIZ.
    static std::string hostNameFor(const std::string& containerId, const std::string& ifname);

    // Creates the pair from the calling thread's netns, both ends up, MTU set;
    // with `ipv6`, the pod end's link-local is the EUI-64 of its MAC.
    static VethEnds create(const std::string& hostName, const std::string& podNetns, const std::string& podIfname, int mtu,
                           bool ipv6);
    // Deletes the pair through its host end; false when it does not exist.
    static bool remove(const std::string& hostName);
    static bool exists(const std::string& hostName);
};

}  // namespace kovs::cni
