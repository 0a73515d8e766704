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
    bool log = false;                 // the connections it allows are logged (kovs.dev/log allow or all)
    bool operator==(const CompiledRule&) const = default;
};

// One of this node's pods' addresses that policies of a direction select:
// what no rule allows is dropped there, and counted for each of them.
struct Isolation {
    IpPrefix address;                   // a host prefix
    std::vector<std::string> policies;  // "ns/name", sorted
    bool log = false;                   // one of them logs what is dropped here (kovs.dev/log deny or all)
    bool operator==(const Isolation&) const = default;
};

// The addresses that the subjects or the peers of admin rules are, one set
// for each distinct list: the flows classify a packet's source and
// destination into sets once (a register bit each, flows/PolicyStage), so a
// rule costs a few flows however many pods it selects, and a label change
// moves one address between sets instead of rewriting every rule naming it.
struct PrefixLess {  // by family, address, then length
    bool operator()(const IpPrefix& a, const IpPrefix& b) const;
};
struct AddressSet {
    bool source = true;               // matched on the packet's source (ingress peers, egress subjects), else its destination
    std::vector<IpPrefix> addresses;  // sorted (PrefixLess), unique; never empty
    bool operator==(const AddressSet&) const = default;
};

// A rule of an AdminNetworkPolicy or of the BaselineAdminNetworkPolicy, for
// this node's pods: its subjects, its peers and its ports, and what a match
// does. Rules of one tier and direction decide in the order of
// `precedence` (0 first). An ANP's rules start at its priority's band,
// priority x kAdminBand (past the end of the band before, where that one
// ran over), so an ANP added or removed does not move the others' rules.
enum class Tier : uint8_t { Admin, Baseline };
struct AdminCompiledRule {
    uint32_t id = 0;  // adminRuleId: its conjunction id and cookie
    Tier tier = Tier::Admin;
    bool ingress = true;
    AdminAction action = AdminAction::Deny;
    int precedence = 0;
    std::string policy, rule;  // the ANP's (or BANP's) name and the rule's
    int subjects = 0;          // this node's subject pods' addresses: an index into CompiledPolicy::adminSets
    int peers = 0;             // the peers' (never empty: an admin rule names its peers), the same
    bool anyPort = true;
    std::vector<PortMatch> ports;
    bool log = false;  // what it allows or denies is logged (kovs.dev/log; a Pass decides nothing)
    bool operator==(const AdminCompiledRule&) const = default;
};

// Rule priorities: a band for each of the API's 1001 ANP priorities (it
// allows 100 rules per direction, so a larger ANP runs into the next band),
// 64000 in all, which leaves OpenFlow's 16 bits room for the stage's own.
// Rules past the end are left out and counted.
constexpr int kAdminBand = 60;
constexpr int kAdminRulesMax = 64000;

// An admin rule's id from where it decides (tier, direction, precedence) and
// which of its named-port groups it is: it stays while the rule does, so a
// change elsewhere does not rewrite its flows. NetworkPolicy rules are
// numbered from 1, below every admin id.
uint32_t adminRuleId(Tier tier, bool ingress, int precedence, int group);
constexpr int kAdminGroupsMax = 4096;

struct CompiledPolicy {
    std::vector<CompiledRule> rules;
    std::vector<Isolation> isolatedIngress, isolatedEgress;  // sorted by address, one each
    std::vector<AdminCompiledRule> admin;                    // both admin tiers, by tier, direction, precedence
    std::vector<AddressSet> adminSets;                       // what admin rules' subjects and peers index, in first use
    int adminLeftOut = 0;                                    // rules past kAdminRulesMax (or kAdminGroupsMax)
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
