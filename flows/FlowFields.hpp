#pragma once
// How an address family's fields are spelled in an OpenFlow match, for the
// stages of FlowTable and PolicyStage alike.
#include <sys/socket.h>

#include <string>

#include "base/IpPrefix.hpp"

namespace kovs::flows {

struct Fields {
    const char* proto;  // "ip", "ipv6"
    const char* src;
    const char* dst;
};
inline Fields fieldsOf(int family) {
    return family == AF_INET ? Fields{"ip", "nw_src", "nw_dst"} : Fields{"ipv6", "ipv6_src", "ipv6_dst"};
}

// An address or prefix as a match value: "10.244.1.5" for a host, "10.0.0.0/8" otherwise.
inline std::string matchValue(const IpPrefix& p) { return p.prefixLen == p.maxPrefixLen() ? p.addressString() : p.str(); }

}  // namespace kovs::flows
