#pragma once
// NetworkPolicy, compiled for one node: the rules that apply to its pods,
// each reduced to three sets (the node's pods it applies to, the peers'
// addresses, the ports) that the flow table turns into one OpenFlow
// conjunction per rule (flows/PolicyStage), so that flows grow with the sum
// of pods, peers and ports, never their product.
//
// Named ports are resolved per pod: against the pod a rule applies to for
// ingress, against the peer for egress. Pods that resolve a rule's ports
// alike share one compiled rule (a Deployment's pods all do).
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "policy/PolicyModel.hpp"

namespace kovs::policy {

struct PortMatch {
    Protocol protocol = Protocol::TCP;
    int first = 0, last = 0;  // 0, 0: every port of the protocol
    auto operator<=>(const PortMatch&) const = default;
};

struct CompiledRule {
    uint32_t id = 0;  // the conjunction id, from 1, stable for the same inputs
    bool ingress = true;
    std::string policy;  // "ns/name"
    int rule = 0;        // its index among the policy's rules of that direction
    std::vector<IpPrefix> appliedTo;  // this node's pods' addresses (host prefixes)
    bool anyPeer = false;             // every source (ingress) or destination (egress)
    std::vector<IpPrefix> peers;      // else these (ipBlock excepts carved out)
    bool anyPort = false;             // every protocol and port
    std::vector<PortMatch> ports;     // else these
    bool operator==(const CompiledRule&) const = default;
};

// One of this node's pods' addresses that policies of a direction select:
// what no rule allows is dropped there, and counted for each of them.
struct Isolation {
    IpPrefix address;                   // a host prefix
    std::vector<std::string> policies;  // "ns/name", sorted
    bool operator==(const Isolation&) const = default;
};

struct CompiledPolicy {
    std::vector<CompiledRule> rules;
    std::vector<Isolation> isolatedIngress, isolatedEgress;  // sorted by address, one each
    bool active() const { return !isolatedIngress.empty() || !isolatedEgress.empty(); }
    bool operator==(const CompiledPolicy&) const = default;
};

// The policies of a direction that isolate the pod with these addresses
// (host prefixes): those selecting any of them.
std::set<std::string> isolatingPolicies(const CompiledPolicy& policy, bool ingress, const std::vector<IpPrefix>& podAddresses);

// The pods of `nodeName` (not hostNetwork, with an address) and what the
// policies say about them.
CompiledPolicy compilePolicy(const ClusterView& cluster, const std::string& nodeName);

}  // namespace kovs::policy
