#include "policy/PolicyModel.hpp"

#include "base/Error.hpp"
#include "policy/DecodeFields.hpp"

namespace kovs::policy {
namespace {

using nlohmann::json;

// One `ports` entry. Throws kovs::Error for what it cannot read (a protocol
// this version cannot match too); the caller leaves the port out.
PolicyPort decodePort(const json& p, const std::string& what) {
    if (!p.is_object()) throw Error(what + ": expected an object");
    PolicyPort out;
    auto protocol = stringMember(p, "protocol", what);
    auto proto = protocolOf(protocol);
    if (!proto) throw Error(what + ": protocol '" + protocol + "' is not supported");
    out.protocol = *proto;
    if (auto it = p.find("port"); it != p.end() && !it->is_null()) {
        if (it->is_string()) {
            out.named = it->get<std::string>();
            if (out.named.empty()) throw Error(what + ".port: empty");
        } else if (validPort(*it)) {
            out.port = it->get<int>();
        } else {
            throw Error(what + ".port: not a port number or name");
        }
    }
    if (auto it = p.find("endPort"); it != p.end() && !it->is_null()) {
        if (!validPort(*it) || out.port == 0 || it->get<int>() < out.port)
            throw Error(what + ".endPort: needs a numeric port and must not be below it");
        out.endPort = it->get<int>();
    }
    return out;
}

// Throws kovs::Error for what it cannot read; the caller leaves the peer out.
PolicyPeer decodePeer(const json& p, const std::string& what) {
    if (!p.is_object()) throw Error(what + ": expected an object");
    PolicyPeer peer;
    for (const auto& [key, _] : p.items()) {
        if (key != "podSelector" && key != "namespaceSelector" && key != "ipBlock")
            throw Error(what + ": peer type '" + key + "' is not supported");
    }
    if (p.contains("podSelector") && !p["podSelector"].is_null())
        peer.pods = LabelSelector::decode(p["podSelector"], what + ".podSelector");
    if (p.contains("namespaceSelector") && !p["namespaceSelector"].is_null())
        peer.namespaces = LabelSelector::decode(p["namespaceSelector"], what + ".namespaceSelector");
    if (auto it = p.find("ipBlock"); it != p.end() && !it->is_null()) {
        if (peer.pods || peer.namespaces) throw Error(what + ": ipBlock together with a selector");
        if (!it->is_object()) throw Error(what + ".ipBlock: expected an object");
        IpBlock block;
        try {
            block.cidr = IpPrefix::parse(stringMember(*it, "cidr", what + ".ipBlock")).network();
            for (const auto& e : listMember(*it, "except", what + ".ipBlock")) {
                if (!e.is_string()) throw Error("except: expected strings");
                auto x = IpPrefix::parse(e.get<std::string>()).network();
                if (x.family != block.cidr.family || !block.cidr.contains(x))
                    throw Error("except " + x.str() + " is not inside " + block.cidr.str());
                block.except.push_back(x);
            }
        } catch (const Error& e) {
            throw Error(what + ".ipBlock: " + e.what());
        }
        peer.ipBlock = std::move(block);
    }
    if (!peer.pods && !peer.namespaces && !peer.ipBlock) throw Error(what + ": an empty peer");
    return peer;
}

// A rule, peer or port that cannot be read is left out with a warning: it
// allows nothing, and the others still work.
std::vector<PolicyRule> decodeRules(const json& spec, const char* key, const char* peersKey, const std::string& what,
                                    std::vector<std::string>& warnings) {
    std::vector<PolicyRule> rules;
    const auto& list = listMember(spec, key, what);
    for (size_t i = 0; i < list.size(); ++i) {
        const auto& r = list[i];
        const auto rw = what + "." + key + "[" + std::to_string(i) + "]";
        PolicyRule rule;
        try {
            if (!r.is_object()) throw Error(rw + ": expected an object");
            const auto& peers = listMember(r, peersKey, rw);
            rule.anyPeer = peers.empty();
            for (size_t j = 0; j < peers.size(); ++j) {
                try {
                    rule.peers.push_back(decodePeer(peers[j], rw + "." + peersKey + "[" + std::to_string(j) + "]"));
                } catch (const Error& e) {
                    warnings.push_back(std::string(e.what()) + ": this peer allows nothing");
                }
            }
            const auto& ports = listMember(r, "ports", rw);
            rule.anyPort = ports.empty();
            for (size_t j = 0; j < ports.size(); ++j) {
                try {
                    rule.ports.push_back(decodePort(ports[j], rw + ".ports[" + std::to_string(j) + "]"));
                } catch (const Error& e) {
                    warnings.push_back(std::string(e.what()) + ": this port allows nothing");
                }
            }
        } catch (const Error& e) {
            warnings.push_back(std::string(e.what()) + ": this rule allows nothing");
            continue;
        }
        // A rule whose every peer or every port was left out allows nothing
        // (an empty list would mean "all").
        if ((!rule.anyPeer && rule.peers.empty()) || (!rule.anyPort && rule.ports.empty())) continue;
        rules.push_back(std::move(rule));
    }
    return rules;
}

}  // namespace

const char* protocolName(Protocol p) {
    switch (p) {
        case Protocol::TCP: return "TCP";
        case Protocol::UDP: return "UDP";
        case Protocol::SCTP: return "SCTP";
    }
    return "?";
}

const char* logModeName(LogMode mode) {
    switch (mode) {
        case LogMode::None: return "none";
        case LogMode::Deny: return "deny";
        case LogMode::Allow: return "allow";
        case LogMode::All: return "all";
    }
    return "?";
}

LogMode decodeLogMode(const json& object, const std::string& what, std::vector<std::string>& warnings) {
    auto meta = object.find("metadata");
    if (meta == object.end() || !meta->is_object()) return LogMode::None;
    auto annotations = meta->find("annotations");
    if (annotations == meta->end() || !annotations->is_object()) return LogMode::None;
    auto it = annotations->find(kLogAnnotation);
    if (it == annotations->end()) return LogMode::None;
    const std::string value = it->is_string() ? it->get<std::string>() : it->dump();
    for (auto mode : {LogMode::None, LogMode::Deny, LogMode::Allow, LogMode::All}) {
        if (value == logModeName(mode)) return mode;
    }
    warnings.push_back(what + ": annotation " + kLogAnnotation + ": '" + value.substr(0, 64) +
                       "' is not deny, allow, all or none: nothing of it is logged (enforced as written)");
    return LogMode::None;
}

NetworkPolicy decodeNetworkPolicy(const json& object) {
    NetworkPolicy np;
    std::tie(np.namespaceName, np.name) = nameOf(object, "NetworkPolicy", true);
    const std::string what = "NetworkPolicy " + np.key();
    np.log = decodeLogMode(object, what, np.warnings);
    try {
        const auto& spec = objectMember(object, "spec", what);
        np.podSelector = LabelSelector::decode(spec.contains("podSelector") ? spec["podSelector"] : json(), what + ".spec.podSelector");
        const auto& types = listMember(spec, "policyTypes", what + ".spec");
        if (types.empty()) {
            np.ingress = true;
            np.egress = spec.contains("egress") && !spec["egress"].is_null();
        }
        for (const auto& t : types) {
            if (t == "Ingress") np.ingress = true;
            else if (t == "Egress") np.egress = true;
            else throw Error(what + ".spec.policyTypes: unknown type " + t.dump());
        }
        if (np.ingress) np.ingressRules = decodeRules(spec, "ingress", "from", what + ".spec", np.warnings);
        if (np.egress) np.egressRules = decodeRules(spec, "egress", "to", what + ".spec", np.warnings);
    } catch (const Error& e) {
        // Which pods it meant, or in which direction, cannot be known: it
        // isolates every pod of its namespace both ways and allows nothing.
        NetworkPolicy isolating;
        isolating.namespaceName = np.namespaceName;
        isolating.name = np.name;
        isolating.ingress = isolating.egress = true;
        isolating.log = np.log;
        isolating.warnings = np.warnings;
        isolating.warnings.push_back(std::string(e.what()) + ": the policy isolates every pod of its namespace and allows nothing");
        return isolating;
    }
    return np;
}

std::optional<PolicyPod> decodePod(const json& object) {
    PolicyPod pod;
    std::tie(pod.namespaceName, pod.name) = nameOf(object, "Pod", true);
    const std::string what = "Pod " + pod.key();
    pod.labels = labelsOf(object, what);
    const auto& spec = objectMember(object, "spec", what);
    pod.nodeName = stringMember(spec, "nodeName", what + ".spec");
    if (pod.nodeName.empty()) return std::nullopt;
    if (auto it = spec.find("hostNetwork"); it != spec.end() && !it->is_null()) {
        if (!it->is_boolean()) throw Error(what + ".spec.hostNetwork: expected a boolean");
        pod.hostNetwork = it->get<bool>();
    }
    for (const auto& c : listMember(spec, "containers", what + ".spec")) {
        if (!c.is_object()) throw Error(what + ".spec.containers: expected objects");
        for (const auto& p : listMember(c, "ports", what + ".spec.containers")) {
            if (!p.is_object()) throw Error(what + ".spec.containers.ports: expected objects");
            ContainerPort port;
            port.name = stringMember(p, "name", what + ".spec.containers.ports");
            if (port.name.empty()) continue;
            auto proto = protocolOf(stringMember(p, "protocol", what + ".spec.containers.ports"));
            auto number = p.find("containerPort");
            if (!proto || number == p.end() || !validPort(*number)) continue;  // nothing a policy can name
            port.protocol = *proto;
            port.port = number->get<int>();
            pod.ports.push_back(std::move(port));
        }
    }
    const auto& status = objectMember(object, "status", what);
    auto phase = stringMember(status, "phase", what + ".status");
    if (phase == "Succeeded" || phase == "Failed") return pod;  // its addresses may be someone else's now
    for (const auto& a : listMember(status, "podIPs", what + ".status")) {
        if (!a.is_object()) throw Error(what + ".status.podIPs: expected objects");
        try {
            appendUnique(pod.ips, IpPrefix::parse(stringMember(a, "ip", what + ".status.podIPs")).host());
        } catch (const Error& e) {
            throw Error(what + ".status.podIPs: " + e.what());
        }
    }
    return pod;
}

PolicyNamespace decodeNamespace(const json& object) {
    PolicyNamespace ns;
    ns.name = nameOf(object, "Namespace", false).second;
    ns.labels = labelsOf(object, "Namespace " + ns.name);
    return ns;
}

const std::vector<std::string>& networkPolicyFields() {
    // All of spec: a member this version does not know must reach the
    // decoder, which then allows less, never more. Of the annotations only
    // kovs's own (kubectl's last-applied-configuration can be large).
    static const std::vector<std::string> k{"spec.*", "annotations", kLogAnnotation};
    return k;
}

const std::vector<std::string>& podFields() {
    static const std::vector<std::string> k{"labels.*", "spec", "nodeName", "hostNetwork", "containers", "ports",
                                            "containerPort", "protocol", "status", "phase", "podIPs", "ip"};
    return k;
}

const std::vector<std::string>& namespaceFields() {
    static const std::vector<std::string> k{"labels.*"};
    return k;
}

}  // namespace kovs::policy
