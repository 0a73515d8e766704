#pragma once
// The policy tiers' semantics as a plain function over the cluster: whether
// a new connection from one endpoint to another is allowed, and by what.
// Written straight from the Kubernetes documentation and the policy API's,
// sharing nothing with the compiler (PolicyCompiler) but the decoded objects,
// so the tests can hold the flows the compiler makes to it: the truth tables
// of the e2e test and the generated cases come from here.
//
// Each side of a connection decides on its own: egress at the source pod,
// ingress at the destination pod; both must allow it. One side, in order:
//   1. AdminNetworkPolicies whose subject is the pod, by priority (lower
//      first; one priority: by name, the API leaves it undefined), each one's
//      rules of the direction in order: the first rule that matches decides:
//      Allow and Deny are final, Pass skips the remaining ANPs.
//   2. NetworkPolicies: where one of the direction selects the pod, they
//      decide (a rule of any of them allows, else denied).
//   3. The BaselineAdminNetworkPolicy: its first matching rule decides.
//   4. Allowed.
// Traffic from the pod's own node (kubelet's probes) is allowed into it
// before the ingress side, as under NetworkPolicy alone.
#include <map>
#include <optional>
#include <string>

#include "base/IpPrefix.hpp"
#include "policy/AdminPolicyModel.hpp"
#include "policy/PolicyModel.hpp"

namespace kovs::policy {

struct Endpoint {
    // A pod of the cluster ("ns/name"); hostNetwork pods are their node.
    std::optional<std::string> pod;
    IpPrefix ip;           // the address it uses
    std::string nodeName;  // the node it is, or that it runs on ("" outside the cluster)
};

// What decided a connection: the tier ("AdminNetworkPolicy",
// "NetworkPolicy", "BaselineAdminNetworkPolicy"; "" when nothing selected
// either side), the policy ("ns/name" for a NetworkPolicy), the rule's name
// (an ANP's; "" for a NetworkPolicy or a default) and which side.
struct Decision {
    bool allowed = true;
    std::string tier, policy, rule;
    bool ingress = false;  // the side that decided
};

Decision decide(const PolicyCluster& cluster, const AdminTiers& tiers, const Endpoint& from, const Endpoint& to, Protocol protocol,
                int port);
// NetworkPolicy alone.
bool allowed(const PolicyCluster& cluster, const Endpoint& from, const Endpoint& to, Protocol protocol, int port);

}  // namespace kovs::policy
