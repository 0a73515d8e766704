#pragma once
// Start-up check, before anything is moved: every family of the node's pod
// CIDRs needs an address of that family on the node (its uplink, eth0, or
// br-phy once the uplink moved there). A kind cluster asked for `ipFamily:
// dual` on a Docker network without IPv6, or a config naming an IPv6 pod
// CIDR on an IPv4-only node, would otherwise run with pods that have an
// address of a family nothing carries out of the node.
#include <functional>
#include <string>
#include <vector>

#include "agent/Config.hpp"
#include "base/IpPrefix.hpp"

namespace kovs::agent {

// One line naming what is missing; "" when nothing is. Standalone mode with
// an uplink kovs manages only (in companion mode the other CNI owns the pod
// network; with uplink.mode none the node's address may be anywhere), and
// only once the uplink has an address (one with none is not set up yet).
std::string missingNodeFamily(const Config& c, const std::function<std::vector<IpPrefix>(const std::string&)>& addressesOf);

}  // namespace kovs::agent
