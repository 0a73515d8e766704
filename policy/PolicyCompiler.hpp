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
#include "policy/AdminPolicyModel.hpp"
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

// A rule of an AdminNetworkPolicy or of the BaselineAdminNetworkPolicy, for
// this node's pods: the same three sets as a CompiledRule, and what a match
// does. Rules of one tier and direction are ordered by `precedence` (0
// decides first: ANPs by priority, then name, each one's rules as written);
// the flows give each its own OpenFlow priority in that order.
enum class Tier : uint8_t { Admin, Baseline };
struct AdminCompiledRule {
    uint32_t id = 0;  // the conjunction id, after the NetworkPolicy rules'
    Tier tier = Tier::Admin;
    bool ingress = true;
    AdminAction action = AdminAction::Deny;
    int precedence = 0;
    std::string policy, rule;         // the ANP's (or BANP's) name and the rule's
    std::vector<IpPrefix> appliedTo;  // this node's subject pods' addresses (host prefixes)
    std::vector<IpPrefix> peers;      // never empty: an admin rule names its peers
    bool anyPort = true;
    std::vector<PortMatch> ports;
    bool operator==(const AdminCompiledRule&) const = default;
};

// The rules one tier and direction can order on one node (OpenFlow has 16
// bits of priority): past it, rules are left out and counted. The API allows
// 100 rules per direction per policy, so this is 500 ANPs selecting pods here.
constexpr int kAdminRulesMax = 50000;

struct CompiledPolicy {
    std::vector<CompiledRule> rules;
    std::vector<Isolation> isolatedIngress, isolatedEgress;  // sorted by address, one each
    std::vector<AdminCompiledRule> admin;                    // both admin tiers, by tier, direction, precedence
    int adminLeftOut = 0;                                    // rules past kAdminRulesMax
    bool active() const { return !isolatedIngress.empty() || !isolatedEgress.empty() || !admin.empty(); }
    bool operator==(const CompiledPolicy&) const = default;
};

// The policies of a direction that isolate the pod with these addresses
// (host prefixes): those selecting any of them.
std::set<std::string> isolatingPolicies(const CompiledPolicy& policy, bool ingress, const std::vector<IpPrefix>& podAddresses);

// The pods of `nodeName` (not hostNetwork, with an address) and what the
// policies say about them: the NetworkPolicies of `cluster` and the admin tiers.
CompiledPolicy compilePolicy(const ClusterView& cluster, const std::string& nodeName, const AdminTiersView& tiers = noAdminTiers());

}  // namespace kovs::policy
