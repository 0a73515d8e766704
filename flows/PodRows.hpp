#pragma once
// The pod rows FlowTable builds flows from, checked: kovs-cni's OVSDB rows
// are text anyone with the database socket could have written, so each field
// is parsed and checked here, and a row that claims another's address or MAC
// is refused (FlowTable.hpp, render, has the rules).
#include <optional>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "base/MacAddress.hpp"
#include "flows/FlowTable.hpp"

namespace kovs::flows {

// A pod whose row passed every check: the only shape a stage builds pod flows from.
struct Pod {
    std::string port;
    MacAddress mac;
    std::vector<IpPrefix> ips;  // host prefixes (/32, /128)
    std::optional<IpPrefix> linkLocal;  // with an IPv6 address: fe80::/64 EUI-64 of its MAC, what the kernel gives it
    int ofport = -1;
    std::vector<std::string> claims;  // its MAC and addresses as text: what no other pod may have

    // The IPv6 sources it may send from: its addresses and its link-local.
    std::vector<IpPrefix> ipv6Sources() const;
};

// The gateway address of `family` among `gateways`, or null.
const IpPrefix* gatewayOf(const std::vector<IpPrefix>& gateways, int family);

// The pods of `in` whose rows pass the checks against the node's gateway
// addresses and claim no address or MAC that another row holds, or claims as
// well while nobody holds it; the others are named in out.skipped, and the
// kept ones' ports and claims fill out.ports and out.holders.
std::vector<Pod> usablePods(const FlowInputs& in, const std::vector<IpPrefix>& gateways, FlowTable::Rendered& out);

}  // namespace kovs::flows
