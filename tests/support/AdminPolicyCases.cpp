#include "tests/support/AdminPolicyCases.hpp"

#include "tests/support/PolicyCluster.hpp"

namespace kovs::test {

using nlohmann::json;

json adminPolicyObject(const std::string& name, int priority, const std::string& spec) {
    auto s = json::parse(spec);
    s["priority"] = priority;
    return {{"apiVersion", "policy.networking.k8s.io/v1alpha1"}, {"kind", "AdminNetworkPolicy"}, {"metadata", {{"name", name}}}, {"spec", s}};
}

json baselinePolicyObject(const std::string& spec, const std::string& name) {
    return {{"apiVersion", "policy.networking.k8s.io/v1alpha1"},
            {"kind", "BaselineAdminNetworkPolicy"},
            {"metadata", {{"name", name}}},
            {"spec", json::parse(spec)}};
}

policy::AdminTiers decodeAdminObjects(const std::vector<json>& objects) {
    policy::AdminTiers t;
    for (const auto& o : objects) {
        if (o.value("kind", "") == "BaselineAdminNetworkPolicy") {
            t.baseline = policy::decodeBaselineAdminNetworkPolicy(o);
        } else {
            auto p = policy::decodeAdminNetworkPolicy(o);
            t.admin[p.name] = p;
        }
    }
    return t;
}

policy::AdminTiers adminTiers(const std::vector<json>& objects) {
    auto t = decodeAdminObjects(objects);
    for (const char* node : {"n1", "n2"})
        t.nodes[node] = {{{"kubernetes.io/hostname", node}, {"role", node == std::string("n1") ? "infra" : "worker"}},
                         {IpPrefix::parse(netpolNodeIP(node))}};
    return t;
}

std::vector<AdminCase> adminCases() {
    auto np = [](const char* ns, const char* name, const char* spec) { return policyObject(ns, name, json::parse(spec)); };
    const auto anp = adminPolicyObject;
    const auto banp = [](const char* spec) { return baselinePolicyObject(spec); };
    return {
        {"priority order: the lower number decides",
         {},
         {anp("deny-y", 20, R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}},
             "ingress": [{"name": "deny-y", "action": "Deny", "from": [{"namespaces": {"matchLabels": {"ns": "y"}}}]}]})"),
          anp("allow-ya", 10, R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}},
             "ingress": [{"name": "allow-ya", "action": "Allow",
                          "from": [{"pods": {"namespaceSelector": {"matchLabels": {"ns": "y"}}, "podSelector": {"matchLabels": {"pod": "a"}}}}]}]})")}},
        {"Pass hands the connection to NetworkPolicy",
         {np("x", "allow-yb-z", R"({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}},
                                                                                 "podSelector": {"matchLabels": {"pod": "b"}}},
                                                                                {"namespaceSelector": {"matchLabels": {"ns": "z"}}}]}]})")},
         {anp("pass-y", 1, R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}},
             "ingress": [{"name": "pass-y", "action": "Pass", "from": [{"namespaces": {"matchLabels": {"ns": "y"}}}]}]})"),
          anp("deny-all", 2, R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}},
             "ingress": [{"name": "deny-all", "action": "Deny", "from": [{"namespaces": {}}]}]})")}},
        {"Pass to the baseline, and a NetworkPolicy that decides before it",
         {np("y", "egress-za", R"({"podSelector": {}, "policyTypes": ["Egress"],
              "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"ns": "z"}}, "podSelector": {"matchLabels": {"pod": "a"}}}]}]})")},
         {anp("pass-z", 5, R"({"subject": {"namespaces": {}},
             "egress": [{"name": "pass-z", "action": "Pass", "to": [{"namespaces": {"matchLabels": {"ns": "z"}}}]}]})"),
          banp(R"({"subject": {"namespaces": {}},
             "egress": [{"name": "deny-z", "action": "Deny", "to": [{"namespaces": {"matchLabels": {"ns": "z"}}}]}]})")}},
        {"an ANP Deny overrides a NetworkPolicy Allow",
         {np("y", "allow-all", R"({"podSelector": {}, "ingress": [{}]})")},
         {anp("deny-x-80", 3, R"({"subject": {"namespaces": {"matchLabels": {"ns": "y"}}},
             "ingress": [{"name": "deny-x-80", "action": "Deny", "from": [{"namespaces": {"matchLabels": {"ns": "x"}}}],
                          "ports": [{"portNumber": {"protocol": "TCP", "port": 80}}]}]})")}},
        {"a baseline Deny under a NetworkPolicy Allow",
         {np("z", "allow-x-into-a", R"({"podSelector": {"matchLabels": {"pod": "a"}},
              "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "x"}}}]}]})")},
         {banp(R"({"subject": {"namespaces": {"matchLabels": {"ns": "z"}}},
             "ingress": [{"name": "deny-all", "action": "Deny", "from": [{"namespaces": {}}]}]})")}},
        {"named ports: the destination's",
         {},
         {anp("named", 7, R"({"subject": {"namespaces": {"matchLabels": {"ns": "y"}}},
             "ingress": [{"name": "x-80", "action": "Deny", "from": [{"namespaces": {"matchLabels": {"ns": "x"}}}],
                          "ports": [{"namedPort": "serve-80-tcp"}]}],
             "egress": [{"name": "z-sctp", "action": "Deny", "to": [{"namespaces": {"matchLabels": {"ns": "z"}}}],
                         "ports": [{"namedPort": "serve-81-sctp"}]}]})")}},
        {"port ranges, for a pod subject in every namespace",
         {},
         {anp("ranges", 8, R"({"subject": {"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "a"}}}},
             "egress": [{"name": "tcp-80-81", "action": "Deny", "to": [{"namespaces": {"matchLabels": {"ns": "y"}}}],
                         "ports": [{"portRange": {"protocol": "TCP", "start": 80, "end": 81}}]}],
             "ingress": [{"name": "udp-70-90", "action": "Deny", "from": [{"namespaces": {"matchLabels": {"ns": "z"}}}],
                          "ports": [{"portRange": {"protocol": "UDP", "start": 70, "end": 90}}]}]})")}},
        {"a pod subject, an Allow before a Deny",
         {},
         {anp("x-b", 4, R"({"subject": {"pods": {"namespaceSelector": {"matchLabels": {"ns": "x"}}, "podSelector": {"matchLabels": {"pod": "b"}}}},
             "ingress": [{"name": "y-81", "action": "Allow", "from": [{"namespaces": {"matchLabels": {"ns": "y"}}}],
                          "ports": [{"portNumber": {"protocol": "TCP", "port": 81}}]},
                         {"name": "rest", "action": "Deny", "from": [{"namespaces": {}}]}]})")}},
        {"egress to networks: one node's pod CIDR allowed, the rest denied (and y on TCP 81, a rule on pods inside them)",
         {},
         {anp("networks", 6, R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}},
             "egress": [{"name": "y-81", "action": "Allow", "to": [{"namespaces": {"matchLabels": {"ns": "y"}}}],
                         "ports": [{"portNumber": {"protocol": "TCP", "port": 81}}]},
                        {"name": "n2-pods", "action": "Allow", "to": [{"networks": ["10.244.2.0/24", "fd00:10:244:2::/64"]}]},
                        {"name": "rest", "action": "Deny", "to": [{"networks": ["0.0.0.0/0", "::/0"]}]}]})")}},
        {"egress to nodes by label",
         {},
         {anp("nodes", 9, R"({"subject": {"namespaces": {"matchLabels": {"ns": "y"}}},
             "egress": [{"name": "infra-80", "action": "Deny", "to": [{"nodes": {"matchLabels": {"role": "infra"}}}],
                         "ports": [{"portNumber": {"protocol": "TCP", "port": 80}}]}]})"),
          anp("nodes-z", 12, R"({"subject": {"namespaces": {"matchLabels": {"ns": "z"}}},
             "egress": [{"name": "all-nodes", "action": "Deny", "to": [{"nodes": {}}]}]})")}},
        {"two ANPs at one priority: by name",
         {},
         {anp("bbb-deny", 11, R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}},
             "ingress": [{"name": "deny-yz", "action": "Deny", "from": [{"namespaces": {"matchExpressions": [
                 {"key": "ns", "operator": "In", "values": ["y", "z"]}]}}]}]})"),
          anp("aaa-allow", 11, R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}},
             "ingress": [{"name": "allow-z", "action": "Allow", "from": [{"namespaces": {"matchLabels": {"ns": "z"}}}]}]})")}},
        {"ANP Pass, then the baseline's Allow before its Deny",
         {},
         {anp("pass-y", 2, R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}},
             "ingress": [{"name": "pass-y", "action": "Pass", "from": [{"namespaces": {"matchLabels": {"ns": "y"}}}]},
                         {"name": "deny-y", "action": "Deny", "from": [{"namespaces": {"matchLabels": {"ns": "y"}}}]}]})"),
          banp(R"({"subject": {"namespaces": {"matchLabels": {"ns": "x"}}},
             "ingress": [{"name": "allow-y", "action": "Allow", "from": [{"namespaces": {"matchLabels": {"ns": "y"}}}]},
                         {"name": "deny-all", "action": "Deny", "from": [{"namespaces": {}}]}]})")}},
    };
}

}  // namespace kovs::test
