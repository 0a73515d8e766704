#pragma once
// AdminNetworkPolicy and BaselineAdminNetworkPolicy on the upstream
// NetworkPolicy suite's cluster (PolicyCluster.hpp): the objects as the API
// server returns them, the tiers decoded from them, and cases shaped like
// sig-network's policy-api conformance suite (priority order, Pass to
// NetworkPolicy and to the baseline, Deny over a NetworkPolicy Allow, a
// baseline Deny under a NetworkPolicy Allow, named ports, port ranges,
// namespace and pod subjects, egress to networks and nodes, two ANPs at one
// priority).
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "policy/AdminPolicyModel.hpp"

namespace kovs::test {

// policy.networking.k8s.io/v1alpha1 objects; `spec` as JSON text.
nlohmann::json adminPolicyObject(const std::string& name, int priority, const std::string& spec);
nlohmann::json baselinePolicyObject(const std::string& spec, const std::string& name = "default");

// The tiers of `objects` (ANPs and at most one BANP, told apart by kind).
policy::AdminTiers decodeAdminObjects(const std::vector<nlohmann::json>& objects);
// The same with nodes n1 and n2:
// labels kubernetes.io/hostname and role (n1 "infra", n2 "worker"), their
// addresses netpolNodeIP's.
policy::AdminTiers adminTiers(const std::vector<nlohmann::json>& objects);

struct AdminCase {
    std::string name;
    std::vector<nlohmann::json> policies;  // NetworkPolicies
    std::vector<nlohmann::json> admin;     // ANPs and the BANP
};
std::vector<AdminCase> adminCases();

}  // namespace kovs::test
