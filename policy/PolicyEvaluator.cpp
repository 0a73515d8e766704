#include "policy/PolicyEvaluator.hpp"

#include <algorithm>
#include <vector>

namespace kovs::policy {
namespace {

const PolicyPod* podOf(const PolicyCluster& c, const Endpoint& e) {
    if (!e.pod) return nullptr;
    auto it = c.pods.find(*e.pod);
    return it == c.pods.end() || it->second.hostNetwork ? nullptr : &it->second;
}

const Labels& namespaceLabels(const PolicyCluster& c, const std::string& ns) {
    static const Labels kNone;
    auto it = c.namespaces.find(ns);
    return it == c.namespaces.end() ? kNone : it->second.labels;
}

// `port` of `protocol` on `target` (the destination: the pod whose named ports count).
bool namedPortIs(const PolicyPod* target, const std::string& name, Protocol protocol, int port) {
    if (!target) return false;
    return std::any_of(target->ports.begin(), target->ports.end(),
                       [&](const ContainerPort& cp) { return cp.name == name && cp.protocol == protocol && cp.port == port; });
}

// --- NetworkPolicy ---

bool peerMatches(const PolicyCluster& c, const NetworkPolicy& np, const PolicyPeer& peer, const Endpoint& e) {
    if (peer.ipBlock) {
        const auto& b = *peer.ipBlock;
        return b.cidr.contains(e.ip) && std::none_of(b.except.begin(), b.except.end(), [&](const IpPrefix& x) { return x.contains(e.ip); });
    }
    const auto* pod = podOf(c, e);
    if (!pod) return false;
    if (peer.namespaces) {
        if (!peer.namespaces->matches(namespaceLabels(c, pod->namespaceName))) return false;
    } else if (pod->namespaceName != np.namespaceName) {
        return false;
    }
    return !peer.pods || peer.pods->matches(pod->labels);
}

bool portMatches(const PolicyPort& p, const PolicyPod* target, Protocol protocol, int port) {
    if (p.protocol != protocol) return false;
    if (!p.named.empty()) return namedPortIs(target, p.named, protocol, port);
    if (p.port == 0) return true;
    return port >= p.port && port <= (p.endPort ? p.endPort : p.port);
}

bool ruleMatches(const PolicyCluster& c, const NetworkPolicy& np, const PolicyRule& r, const Endpoint& peer, const PolicyPod* target,
                 Protocol protocol, int port) {
    bool peerOk = r.anyPeer || std::any_of(r.peers.begin(), r.peers.end(), [&](const PolicyPeer& p) { return peerMatches(c, np, p, peer); });
    bool portOk = r.anyPort || std::any_of(r.ports.begin(), r.ports.end(), [&](const PolicyPort& p) { return portMatches(p, target, protocol, port); });
    return peerOk && portOk;
}

// The NetworkPolicies' word on `pod`'s side, in one direction: none where no
// policy of that direction selects it.
std::optional<Decision> networkPolicies(const PolicyCluster& c, const PolicyPod& pod, bool ingress, const Endpoint& peer,
                                        const PolicyPod* target, Protocol protocol, int port) {
    std::optional<Decision> out;
    for (const auto& [key, np] : c.policies) {
        if (np.namespaceName != pod.namespaceName || !np.podSelector.matches(pod.labels)) continue;
        if (!(ingress ? np.ingress : np.egress)) continue;
        if (!out) out = Decision{false, "NetworkPolicy", key, "", ingress};  // isolated: denied unless a rule allows
        for (const auto& r : ingress ? np.ingressRules : np.egressRules) {
            if (ruleMatches(c, np, r, peer, target, protocol, port)) return Decision{true, "NetworkPolicy", key, "", ingress};
        }
    }
    return out;
}

// --- AdminNetworkPolicy and BaselineAdminNetworkPolicy ---

bool podsMatch(const PolicyCluster& c, const NamespacedPods& s, const PolicyPod& pod) {
    return s.namespaces.matches(namespaceLabels(c, pod.namespaceName)) && (!s.pods || s.pods->matches(pod.labels));
}

bool adminPeerMatches(const PolicyCluster& c, const AdminTiers& t, const AdminPeer& peer, const Endpoint& e) {
    switch (peer.kind) {
        case AdminPeer::Kind::Namespaces:
        case AdminPeer::Kind::Pods: {
            const auto* pod = podOf(c, e);
            return pod && podsMatch(c, peer.pods, *pod);
        }
        case AdminPeer::Kind::Nodes: {
            if (podOf(c, e) || e.nodeName.empty()) return false;  // a node's own address (hostNetwork pods are their node)
            static const Labels kNone;
            auto it = t.nodes.find(e.nodeName);
            return peer.nodes.matches(it == t.nodes.end() ? kNone : it->second.labels);
        }
        case AdminPeer::Kind::Networks:
            return std::any_of(peer.networks.begin(), peer.networks.end(), [&](const IpPrefix& n) { return n.contains(e.ip); });
    }
    return false;
}

bool adminPortMatches(const AdminPort& p, const PolicyPod* target, Protocol protocol, int port) {
    if (!p.named.empty()) return namedPortIs(target, p.named, protocol, port);
    return p.protocol == protocol && port >= p.first && port <= p.last;
}

const AdminRule* firstMatch(const PolicyCluster& c, const AdminTiers& t, const AdminPolicy& p, bool ingress, const Endpoint& peer,
                            const PolicyPod* target, Protocol protocol, int port) {
    for (const auto& r : ingress ? p.ingress : p.egress) {
        bool peerOk = std::any_of(r.peers.begin(), r.peers.end(), [&](const AdminPeer& x) { return adminPeerMatches(c, t, x, peer); });
        bool portOk = r.ports.empty() ||
                      std::any_of(r.ports.begin(), r.ports.end(), [&](const AdminPort& x) { return adminPortMatches(x, target, protocol, port); });
        if (peerOk && portOk) return &r;
    }
    return nullptr;
}

Decision side(const PolicyCluster& c, const AdminTiers& t, const PolicyPod& pod, bool ingress, const Endpoint& peer, const PolicyPod* target,
              Protocol protocol, int port) {
    std::vector<const AdminPolicy*> anps;
    for (const auto& [_, p] : t.admin) {
        if (podsMatch(c, p.subject, pod)) anps.push_back(&p);
    }
    std::stable_sort(anps.begin(), anps.end(), [](const AdminPolicy* a, const AdminPolicy* b) { return a->priority < b->priority; });
    for (const auto* p : anps) {
        const auto* r = firstMatch(c, t, *p, ingress, peer, target, protocol, port);
        if (!r) continue;
        if (r->action == AdminAction::Pass) break;
        return {r->action == AdminAction::Allow, "AdminNetworkPolicy", p->name, r->name, ingress};
    }
    if (auto np = networkPolicies(c, pod, ingress, peer, target, protocol, port)) return *np;
    if (t.baseline && podsMatch(c, t.baseline->subject, pod)) {
        if (const auto* r = firstMatch(c, t, *t.baseline, ingress, peer, target, protocol, port))
            return {r->action == AdminAction::Allow, "BaselineAdminNetworkPolicy", t.baseline->name, r->name, ingress};
    }
    return {true, "", "", "", ingress};
}

}  // namespace

Decision decide(const PolicyCluster& c, const AdminTiers& t, const Endpoint& from, const Endpoint& to, Protocol protocol, int port) {
    const auto* src = podOf(c, from);
    const auto* dst = podOf(c, to);
    Decision egress{true, "", "", "", false};
    if (src) {
        egress = side(c, t, *src, false, to, dst, protocol, port);
        if (!egress.allowed) return egress;
    }
    if (!dst) return egress;
    if (!from.nodeName.empty() && !from.pod && from.nodeName == dst->nodeName) return egress;  // its own node
    if (from.pod && !src && from.nodeName == dst->nodeName) return egress;                     // a hostNetwork pod there
    auto ingress = side(c, t, *dst, true, from, dst, protocol, port);
    return ingress.allowed && ingress.tier.empty() ? egress : ingress;
}

bool allowed(const PolicyCluster& c, const Endpoint& from, const Endpoint& to, Protocol protocol, int port) {
    return decide(c, noAdminTiers(), from, to, protocol, port).allowed;
}

}  // namespace kovs::policy
