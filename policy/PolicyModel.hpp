#pragma once
// What NetworkPolicy enforcement reads from the Kubernetes API, decoded to
// the fields it needs (networking.k8s.io/v1 NetworkPolicy, v1 Pod, v1
// Namespace), and the decoders. The semantics are the Kubernetes
// documentation's; docs/policy.md says what kovs adds (own-node traffic
// allowed, what happens to open connections, SCTP).
//
// Decoding is strict about shape and forgiving about the future: a field of
// the wrong type makes the object fail to decode (skipped and counted by the
// informer); a part of a policy this version cannot express (a peer of an
// unknown type, a selector operator it does not know, a protocol other than
// TCP/UDP/SCTP) is left out in the direction that allows less, and named in
// NetworkPolicy::warnings. Never more than the policy says is allowed.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "policy/LabelSelector.hpp"

namespace kovs::policy {

enum class Protocol { TCP, UDP, SCTP };
const char* protocolName(Protocol p);

// The annotation kovs.dev/log on a NetworkPolicy, AdminNetworkPolicy or
// BaselineAdminNetworkPolicy: which of the new connections its rules decide
// are logged (docs/policy.md, "Policy logging"). "deny", "allow" or "all";
// any other value is a warning of the policy and logs nothing, it never
// changes what the policy enforces.
enum class LogMode : uint8_t { None, Deny, Allow, All };
inline constexpr const char* kLogAnnotation = "kovs.dev/log";
// Whether `mode` logs a decision that allowed (or denied) a connection.
inline bool logs(LogMode mode, bool allowed) {
    return mode == LogMode::All || (allowed ? mode == LogMode::Allow : mode == LogMode::Deny);
}
const char* logModeName(LogMode mode);  // "none", "deny", "allow", "all"
// The annotation of `object` (a decoded API object); an unknown value or
// type is named in `warnings` ("<what>: ...") and gives LogMode::None.
LogMode decodeLogMode(const nlohmann::json& object, const std::string& what, std::vector<std::string>& warnings);

struct ContainerPort {
    std::string name;
    Protocol protocol = Protocol::TCP;
    int port = 0;
    bool operator==(const ContainerPort&) const = default;
};

struct PolicyPod {
    std::string namespaceName, name, nodeName;
    Labels labels;
    std::vector<IpPrefix> ips;  // status.podIPs, host prefixes; empty until it has one, and once it ended
    bool hostNetwork = false;
    std::vector<ContainerPort> ports;  // named container ports (unnamed ones cannot be referred to)
    bool operator==(const PolicyPod&) const = default;
    std::string key() const { return namespaceName + "/" + name; }
};

struct PolicyNamespace {
    std::string name;
    Labels labels;
    bool operator==(const PolicyNamespace&) const = default;
};

struct IpBlock {
    IpPrefix cidr;  // a network prefix
    std::vector<IpPrefix> except;
    bool operator==(const IpBlock&) const = default;
};

// One element of `from` / `to`. Selectors alone: pods in the policy's
// namespace (podSelector), every pod of the selected namespaces
// (namespaceSelector), or both narrowed together.
struct PolicyPeer {
    std::optional<LabelSelector> pods;
    std::optional<LabelSelector> namespaces;
    std::optional<IpBlock> ipBlock;
    bool operator==(const PolicyPeer&) const = default;
};

struct PolicyPort {
    Protocol protocol = Protocol::TCP;
    int port = 0;      // 0: every port of the protocol
    int endPort = 0;   // with port: the range port..endPort
    std::string named; // a container port's name, resolved per pod
    bool operator==(const PolicyPort&) const = default;
};

struct PolicyRule {
    bool anyPeer = true;  // `from`/`to` absent or empty
    std::vector<PolicyPeer> peers;
    bool anyPort = true;  // `ports` absent or empty
    std::vector<PolicyPort> ports;
    bool operator==(const PolicyRule&) const = default;
};

struct NetworkPolicy {
    std::string namespaceName, name;
    LabelSelector podSelector;
    bool ingress = false, egress = false;  // policyTypes, defaults applied
    std::vector<PolicyRule> ingressRules, egressRules;
    LogMode log = LogMode::None;        // kovs.dev/log
    std::vector<std::string> warnings;  // what was left out, and why
    bool operator==(const NetworkPolicy&) const = default;
    std::string key() const { return namespaceName + "/" + name; }
};

using Namespaces = std::map<std::string, PolicyNamespace>;  // key: the name
using Pods = std::map<std::string, PolicyPod>;              // key: "ns/name"
using Policies = std::map<std::string, NetworkPolicy>;      // key: "ns/name"

// The cluster as the policy stage sees it, held elsewhere: in the agent the
// informers' stores (held once), in tests a PolicyCluster.
struct ClusterView {
    const Namespaces& namespaces;
    const Pods& pods;
    const Policies& policies;
};

struct PolicyCluster {
    Namespaces namespaces;
    Pods pods;
    Policies policies;
    operator ClusterView() const { return {namespaces, pods, policies}; }
};

// Decoders for kube::Informer: throw kovs::Error naming the object and the
// field on a malformed object.
NetworkPolicy decodeNetworkPolicy(const nlohmann::json& object);
// nullopt for a pod kovs has nothing to do with: one not bound to a node yet.
std::optional<PolicyPod> decodePod(const nlohmann::json& object);
PolicyNamespace decodeNamespace(const nlohmann::json& object);

// The members each decoder reads (kube::ListWatchOptions::fields).
const std::vector<std::string>& networkPolicyFields();
const std::vector<std::string>& podFields();
const std::vector<std::string>& namespaceFields();

}  // namespace kovs::policy
