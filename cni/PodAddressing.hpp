#pragma once
// Addresses and routes of the pod interface, from the IPAM result. Every call
// acts on the calling thread's current netns: call it inside a Netns.
#include <string>
#include <vector>

#include "cni/CniResult.hpp"

namespace kovs::cni {

class PodAddressing {
public:
    static int ifindex(const std::string& ifname);
    // Adds every IP and route; a route without gw goes via the gateway of an
    // IP of its family, and a default route via that gateway is added when the
    // IPAM result has none. Returns the routes installed (for the result).
    static std::vector<ResultRoute> apply(const std::string& ifname, const CniResult& ipam);
    // The interface's addresses as "10.244.0.5/24", always with the prefix length.
    static std::vector<std::string> addresses(const std::string& ifname);
};

}  // namespace kovs::cni
