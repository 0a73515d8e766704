#pragma once
// Which pod traffic leaves the node masqueraded to the node's address, as
// kindnet does it: traffic from pod CIDRs to anything that is not a pod CIDR
// or a node address (the Docker host, the internet) gets the node's address,
// because nothing outside the cluster has a route back to pod CIDRs.
// Pod -> pod and pod -> node keep the pod's address. Pure: the rules as data.
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"

namespace kovs::egress {

struct EgressInputs {
    std::vector<IpPrefix> clusterCidrs;      // configured; empty: the pod CIDRs below
    std::vector<IpPrefix> podCidrs;          // this node's and every accepted peer's
    std::vector<IpPrefix> nodeAddresses;     // this node's and every peer's underlay address
    std::vector<IpPrefix> nonMasquerade;     // configured extra destinations
};

// In order: a packet to a `keep` destination is left alone; otherwise one from
// a `masquerade` source gets the address of the interface it leaves by.
struct EgressRules {
    std::vector<IpPrefix> keep;
    std::vector<IpPrefix> masquerade;

    bool empty() const { return masquerade.empty(); }
    // "keep 10.244.0.0/16, 172.18.0.2/32; masquerade from 10.244.0.0/16", for logs and status.
    std::string describe() const;
    bool operator==(const EgressRules&) const = default;
};

// The rules of one family (AF_INET: table ip kovs, AF_INET6: table ip6 kovs)
// from the inputs of both; duplicates and prefixes already covered by a wider
// one are left out, the rest sorted. Empty when no pod CIDR is of that family.
EgressRules planEgress(const EgressInputs& in, int family);

}  // namespace kovs::egress
