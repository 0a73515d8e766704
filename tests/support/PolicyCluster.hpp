#pragma once
// The cluster of the upstream NetworkPolicy e2e suite (kubernetes
// test/e2e/network/netpol): namespaces x, y, z with pods a, b, c, each
// serving TCP, UDP and SCTP on ports 80 and 81 under named container ports
// (serve-80-tcp ...), spread over two nodes, and NetworkPolicy objects as the
// API server returns them. Plus a generator of random policies over the same
// labels, for cases nobody wrote by hand.
#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

#include "policy/PolicyModel.hpp"

namespace kovs::test {

struct NetpolPod {
    std::string ns, name, node;
    std::string ip;   // "10.244.N.x"
    std::string ip6;  // "fd00:10:244:N::x" in a dual-stack cluster, else ""
    std::string mac;  // for the flow table
    int ofport;       // on its node's bridge
};

// x/a n1, x/b n2, x/c n1, y/a n2, ... : every namespace on both nodes.
// Node n1 has pod CIDR 10.244.1.0/24, n2 10.244.2.0/24; node addresses
// 172.18.0.2 and 172.18.0.3.
// `dual`: each pod has an IPv6 address too (fd00:10:244:N::/64, kind's).
std::vector<NetpolPod> netpolPods(bool dual = false);
const char* netpolNodeIP(const std::string& node);

nlohmann::json podObject(const NetpolPod& p);
nlohmann::json namespaceObject(const std::string& ns);
// A NetworkPolicy object: metadata from `ns`/`name`, `spec` as given.
nlohmann::json policyObject(const std::string& ns, const std::string& name, nlohmann::json spec);

// The cluster the agent would see: namespaces and pods above, and `policies`.
policy::PolicyCluster netpolCluster(const std::vector<nlohmann::json>& policies, bool dual = false);

struct PolicyCase {
    std::string name;
    std::vector<nlohmann::json> policies;
};
// Cases after the upstream suite's (deny all, namespace and pod selectors,
// both together, ports, named ports, endPort, egress, ipBlock with except,
// match expressions, a policy this version cannot express): each of its
// cases that needs no feature kovs lacks and no change while it runs (the e2e
// test runs those: label and policy updates). ipBlocks name the addresses
// netpolPods(true) gives.
std::vector<PolicyCase> netpolCases();
// `count` cases of 1-3 random policies each (labels pod/ns, random peers,
// ports and directions), reproducible from `seed`.
std::vector<PolicyCase> randomPolicyCases(unsigned seed, int count);

}  // namespace kovs::test
