#pragma once
// The cluster admin's policy tiers of the sig-network policy API
// (policy.networking.k8s.io/v1alpha1, the version the current policy-api
// release serves), decoded to what enforcement needs:
//
//   AdminNetworkPolicy (ANP)          cluster-scoped, priority 0-1000 (lower
//                                     first), rules Allow, Deny or Pass; it
//                                     decides before any NetworkPolicy.
//   BaselineAdminNetworkPolicy (BANP) the one named "default", rules Allow or
//                                     Deny; it decides only what no ANP and
//                                     no NetworkPolicy decided.
//
// PolicyEvaluator.hpp has the order. Bad input never widens what a policy
// allows: an object that does not decode, or has a priority out of range,
// is refused whole (the informer counts it, status names it); a rule with
// an unknown action, peer type or port shape is left out and named in the
// policy's warnings, because a rule read in part would match other packets
// than the one written.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "policy/LabelSelector.hpp"
#include "policy/PolicyModel.hpp"

namespace kovs::policy {

enum class AdminAction { Allow, Deny, Pass };

// The pods of some namespaces: `namespaces` selects the namespaces, `pods`
// (when set) the pods in them.
struct NamespacedPods {
    LabelSelector namespaces;
    std::optional<LabelSelector> pods;  // unset: every pod of those namespaces
    bool operator==(const NamespacedPods&) const = default;
};

// One element of a rule's `from` / `to`: exactly one of the API's peer types.
struct AdminPeer {
    enum class Kind { Namespaces, Pods, Nodes, Networks };
    Kind kind = Kind::Namespaces;
    NamespacedPods pods;             // Namespaces (pods unset) and Pods
    LabelSelector nodes;             // Nodes: the nodes' own addresses (egress only)
    std::vector<IpPrefix> networks;  // Networks: CIDRs (egress only)
    bool operator==(const AdminPeer&) const = default;
};

// portNumber (first == last), portRange (first..last) or namedPort.
struct AdminPort {
    Protocol protocol = Protocol::TCP;
    int first = 0, last = 0;
    std::string named;  // a container port of the destination pod
    bool operator==(const AdminPort&) const = default;
};

struct AdminRule {
    std::string name;
    AdminAction action = AdminAction::Deny;
    std::vector<AdminPeer> peers;  // at least one
    std::vector<AdminPort> ports;  // empty: every port and protocol
    bool operator==(const AdminRule&) const = default;
};

// An ANP or the BANP (which has no priority and no Pass).
struct AdminPolicy {
    std::string name;
    int priority = 0;
    NamespacedPods subject;
    std::vector<AdminRule> ingress, egress;  // in the order written: the first that matches decides
    LogMode log = LogMode::None;             // kovs.dev/log
    std::vector<std::string> warnings;       // rules left out, and why
    bool operator==(const AdminPolicy&) const = default;
};

using AdminPolicies = std::map<std::string, AdminPolicy>;  // key: the name

// A node as an egress `nodes` peer sees it: its labels select it, its
// addresses (status.addresses, InternalIP and ExternalIP) are what it is.
struct PolicyNode {
    Labels labels;
    std::vector<IpPrefix> addresses;  // host prefixes
    bool operator==(const PolicyNode&) const = default;
};

// The cluster admin's tiers as the compiler reads them, next to a
// ClusterView and, like it, held elsewhere: in the agent the informers'
// stores, in tests an AdminTiers.
struct AdminTiersView {
    const AdminPolicies& admin;
    const AdminPolicy* baseline;                     // nullptr: none
    const std::map<std::string, PolicyNode>& nodes;  // by name
};

struct AdminTiers {
    AdminPolicies admin;
    std::optional<AdminPolicy> baseline;
    std::map<std::string, PolicyNode> nodes;  // by name
    operator AdminTiersView() const { return {admin, baseline ? &*baseline : nullptr, nodes}; }
};
// No admin policies: what a cluster without the policy API's CRDs has.
const AdminTiers& noAdminTiers();

// Throw kovs::Error naming the object and the field for an object refused
// whole (malformed, priority out of range, a BANP not named "default", a
// subject of neither or both kinds).
AdminPolicy decodeAdminNetworkPolicy(const nlohmann::json& object);
AdminPolicy decodeBaselineAdminNetworkPolicy(const nlohmann::json& object);

// A Node object as an egress `nodes` peer needs it: labels, and its
// InternalIP and ExternalIP addresses (one that does not parse is left out).
PolicyNode decodePolicyNode(const nlohmann::json& object);

// The members each decoder reads (kube::ListWatchOptions::fields): an
// admin policy's whole spec (a member this version does not know must reach
// the decoder, which then leaves its rule out), a Node's labels and addresses.
const std::vector<std::string>& adminPolicyFields();
const std::vector<std::string>& policyNodeFields();

// ANPs of one priority, by the names of each such set: the API leaves their
// order undefined (kovs takes them by name), so status warns of them.
std::vector<std::vector<std::string>> samePriority(const AdminPolicies& policies);

}  // namespace kovs::policy
