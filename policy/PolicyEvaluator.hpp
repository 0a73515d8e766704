#pragma once
// NetworkPolicy's semantics as a plain function over the cluster: whether a
// new connection from one endpoint to another is allowed. Written straight
// from the Kubernetes documentation, sharing nothing with the compiler
// (PolicyCompiler) but the decoded objects, so the tests can hold the flows
// the compiler makes to it: the truth tables of the e2e test and the
// generated cases come from here.
#include <optional>
#include <string>

#include "base/IpPrefix.hpp"
#include "policy/PolicyModel.hpp"

namespace kovs::policy {

struct Endpoint {
    // A pod of the cluster ("ns/name"); hostNetwork pods are their node.
    std::optional<std::string> pod;
    IpPrefix ip;           // the address it uses
    std::string nodeName;  // the node it is, or that it runs on ("" outside the cluster)
};

bool allowed(const PolicyCluster& cluster, const Endpoint& from, const Endpoint& to, Protocol protocol, int port);

}  // namespace kovs::policy
