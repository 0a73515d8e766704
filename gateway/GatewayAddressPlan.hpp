#pragma once
// Which addresses the gateway guard keeps on the gateway, and what one
// reconcile changes to get there. Pure, so each case is a unit test.
//
// Two policies:
// - configured (standalone mode, or gateway.addresses given): exactly these
//   addresses. Missing ones are added; foreign ones (any IPv4, any IPv6 but
//   link-local) are removed, because two gateways on one pod subnet answer
//   ARP for the pods and break them.
// - adopted (companion mode without gateway.addresses): the other CNI
//   addressed its own device (OVN-Kubernetes' management port holds .2 of
//   the node subnet, Kube-OVN's ovn0 an address on its join subnet, Antrea's
//   gateway the first address of the pod CIDR), so kovs learns what the
//   device holds and restores that when it is gone. Per address family: while
//   the device holds any address of a family, those are the ones to keep (the
//   CNI may re-address its device: what it holds now is its intent); when it
//   holds none of a family any more (systemd-networkd's reconfigure removes
//   every address at once), the last ones seen come back. Nothing is ever
//   removed from a device that is not kovs's.
#include <vector>

#include "base/IpPrefix.hpp"

namespace kovs::gateway {

struct GatewayAddressPolicy {
    std::vector<IpPrefix> configured;  // used when adopt is false
    bool adopt = false;
};

struct GatewayAddressPlan {
    std::vector<IpPrefix> add;
    std::vector<IpPrefix> remove;
    // What the guard keeps from now on (its routes and sources follow these);
    // adopted: what the device holds, or the last seen for a family it lost.
    std::vector<IpPrefix> guarded;
};

// `observed`: the device's addresses now, with prefix lengths (IPv6
// link-local ones are ignored: the kernel's). `adopted`: `guarded` of the
// previous plan (empty at first).
GatewayAddressPlan planGatewayAddresses(const GatewayAddressPolicy& policy, const std::vector<IpPrefix>& adopted,
                                        const std::vector<IpPrefix>& observed);

bool isIpv6LinkLocal(const IpPrefix& p);

}  // namespace kovs::gateway
