#include "policy/PolicyEvaluator.hpp"

#include <algorithm>

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

// `port` of `protocol` on `target` (the destination: the pod whose named ports count).
bool portMatches(const PolicyPort& p, const PolicyPod* target, Protocol protocol, int port) {
    if (p.protocol != protocol) return false;
    if (!p.named.empty()) {
        if (!target) return false;
        return std::any_of(target->ports.begin(), target->ports.end(),
                           [&](const ContainerPort& cp) { return cp.name == p.named && cp.protocol == protocol && cp.port == port; });
    }
    if (p.port == 0) return true;
    return port >= p.port && port <= (p.endPort ? p.endPort : p.port);
}

bool ruleMatches(const PolicyCluster& c, const NetworkPolicy& np, const PolicyRule& r, const Endpoint& peer, const PolicyPod* target,
                 Protocol protocol, int port) {
    bool peerOk = r.anyPeer || std::any_of(r.peers.begin(), r.peers.end(), [&](const PolicyPeer& p) { return peerMatches(c, np, p, peer); });
    bool portOk = r.anyPort || std::any_of(r.ports.begin(), r.ports.end(), [&](const PolicyPort& p) { return portMatches(p, target, protocol, port); });
    return peerOk && portOk;
}

// Whether `pod`'s side of the connection lets it through, in one direction.
bool directionAllows(const PolicyCluster& c, const PolicyPod& pod, bool ingress, const Endpoint& peer, const PolicyPod* target,
                     Protocol protocol, int port) {
    bool isolated = false;
    for (const auto& [_, np] : c.policies) {
        if (np.namespaceName != pod.namespaceName || !np.podSelector.matches(pod.labels)) continue;
        if (!(ingress ? np.ingress : np.egress)) continue;
        isolated = true;
        for (const auto& r : ingress ? np.ingressRules : np.egressRules) {
            if (ruleMatches(c, np, r, peer, target, protocol, port)) return true;
        }
    }
    return !isolated;
}

}  // namespace

bool allowed(const PolicyCluster& c, const Endpoint& from, const Endpoint& to, Protocol protocol, int port) {
    const auto* src = podOf(c, from);
    const auto* dst = podOf(c, to);
    if (src && !directionAllows(c, *src, false, to, dst, protocol, port)) return false;
    if (!dst) return true;
    if (!from.nodeName.empty() && !from.pod && from.nodeName == dst->nodeName) return true;  // its own node
    if (from.pod && !src && from.nodeName == dst->nodeName) return true;                     // a hostNetwork pod there
    return directionAllows(c, *dst, true, from, dst, protocol, port);
}

}  // namespace kovs::policy
