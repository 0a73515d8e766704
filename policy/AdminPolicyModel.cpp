#include "policy/AdminPolicyModel.hpp"

#include "base/Error.hpp"
#include "policy/DecodeFields.hpp"

namespace kovs::policy {
namespace {

using nlohmann::json;

constexpr int kMaxPriority = 1000;

LabelSelector selectorMember(const json& obj, const char* key, const std::string& what) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) throw Error(what + "." + key + ": missing");
    return LabelSelector::decode(*it, what + "." + key);
}

// {namespaceSelector, podSelector}: both required, as the API has them.
NamespacedPods namespacedPods(const json& obj, const std::string& what) {
    if (!obj.is_object()) throw Error(what + ": expected an object");
    return {selectorMember(obj, "namespaceSelector", what), selectorMember(obj, "podSelector", what)};
}

// Exactly one member: the API's "one of" (a subject, a peer, a port).
std::string onlyMember(const json& obj, const std::string& what) {
    if (!obj.is_object()) throw Error(what + ": expected an object");
    std::string key;
    for (const auto& [k, v] : obj.items()) {
        if (v.is_null()) continue;
        if (!key.empty()) throw Error(what + ": both " + key + " and " + k + " (exactly one is allowed)");
        key = k;
    }
    if (key.empty()) throw Error(what + ": empty (exactly one member is needed)");
    return key;
}

AdminPeer decodePeer(const json& p, bool egress, const std::string& what) {
    const auto kind = onlyMember(p, what);
    AdminPeer peer;
    if (kind == "namespaces") {
        peer.kind = AdminPeer::Kind::Namespaces;
        peer.pods.namespaces = LabelSelector::decode(p[kind], what + ".namespaces");
    } else if (kind == "pods") {
        peer.kind = AdminPeer::Kind::Pods;
        peer.pods = namespacedPods(p[kind], what + ".pods");
    } else if (egress && kind == "nodes") {
        peer.kind = AdminPeer::Kind::Nodes;
        peer.nodes = LabelSelector::decode(p[kind], what + ".nodes");
    } else if (egress && kind == "networks") {
        peer.kind = AdminPeer::Kind::Networks;
        const auto& list = listMember(p, "networks", what);
        if (list.empty()) throw Error(what + ".networks: empty");
        for (const auto& n : list) {
            if (!n.is_string()) throw Error(what + ".networks: expected CIDR strings");
            try {
                peer.networks.push_back(IpPrefix::parse(n.get<std::string>()).network());
            } catch (const Error& e) {
                throw Error(what + ".networks: " + e.what());
            }
        }
    } else {
        throw Error(what + ": peer type '" + kind + "' is not supported" + (egress ? "" : " in ingress"));
    }
    return peer;
}

AdminPort decodePort(const json& p, const std::string& what) {
    const auto kind = onlyMember(p, what);
    AdminPort port;
    const auto& v = p[kind];
    if (kind == "namedPort") {
        if (!v.is_string() || v.get<std::string>().empty()) throw Error(what + ".namedPort: expected a name");
        port.named = v.get<std::string>();
        return port;
    }
    if (kind != "portNumber" && kind != "portRange") throw Error(what + ": port type '" + kind + "' is not supported");
    if (!v.is_object()) throw Error(what + "." + kind + ": expected an object");
    const auto protocol = stringMember(v, "protocol", what + "." + kind);
    auto proto = protocolOf(protocol);
    if (!proto) throw Error(what + "." + kind + ": protocol '" + protocol + "' is not supported");
    port.protocol = *proto;
    auto number = [&](const char* key) {
        auto it = v.find(key);
        if (it == v.end() || !validPort(*it)) throw Error(what + "." + kind + "." + key + ": not a port number 1-65535");
        return it->get<int>();
    };
    if (kind == "portNumber") {
        port.first = port.last = number("port");
    } else {
        port.first = number("start");
        port.last = number("end");
        if (port.last < port.first) throw Error(what + ".portRange: end is below start");
    }
    return port;
}

std::optional<AdminAction> actionOf(const std::string& a, bool baseline) {
    if (a == "Allow") return AdminAction::Allow;
    if (a == "Deny") return AdminAction::Deny;
    if (a == "Pass" && !baseline) return AdminAction::Pass;
    return std::nullopt;
}

std::vector<AdminRule> decodeRules(const json& spec, bool egress, bool baseline, const std::string& what,
                                   std::vector<std::string>& warnings) {
    const char* key = egress ? "egress" : "ingress";
    const char* peersKey = egress ? "to" : "from";
    std::vector<AdminRule> rules;
    const auto& list = listMember(spec, key, what);
    for (size_t i = 0; i < list.size(); ++i) {
        const auto rw = what + "." + key + "[" + std::to_string(i) + "]";
        try {
            const auto& r = list[i];
            if (!r.is_object()) throw Error(rw + ": expected an object");
            AdminRule rule;
            rule.name = stringMember(r, "name", rw);
            const auto action = stringMember(r, "action", rw);
            auto a = actionOf(action, baseline);
            if (!a) throw Error(rw + ": action '" + action + "' is not " + (baseline ? "Allow or Deny" : "Allow, Deny or Pass"));
            rule.action = *a;
            const auto& peers = listMember(r, peersKey, rw);
            if (peers.empty()) throw Error(rw + "." + peersKey + ": empty (a rule needs a peer)");
            for (size_t j = 0; j < peers.size(); ++j)
                rule.peers.push_back(decodePeer(peers[j], egress, rw + "." + peersKey + "[" + std::to_string(j) + "]"));
            const auto& ports = listMember(r, "ports", rw);
            for (size_t j = 0; j < ports.size(); ++j) rule.ports.push_back(decodePort(ports[j], rw + ".ports[" + std::to_string(j) + "]"));
            rules.push_back(std::move(rule));
        } catch (const Error& e) {
            warnings.push_back(std::string(e.what()) + ": the rule is left out");
        }
    }
    return rules;
}

AdminPolicy decode(const json& object, bool baseline) {
    const char* kind = baseline ? "BaselineAdminNetworkPolicy" : "AdminNetworkPolicy";
    AdminPolicy p;
    p.name = nameOf(object, kind, false).second;
    const std::string what = std::string(kind) + " " + p.name;
    if (baseline && p.name != "default") throw Error(what + ": the only BaselineAdminNetworkPolicy the API allows is named \"default\"");
    p.log = decodeLogMode(object, what, p.warnings);
    const auto& spec = objectMember(object, "spec", what);
    if (!baseline) {
        auto it = spec.find("priority");
        if (it == spec.end() || !it->is_number_integer() || it->get<long>() < 0 || it->get<long>() > kMaxPriority)
            throw Error(what + ".spec.priority: not an integer 0-" + std::to_string(kMaxPriority));
        p.priority = it->get<int>();
    }
    const auto& subject = objectMember(spec, "subject", what + ".spec");
    const auto subjectKind = onlyMember(subject, what + ".spec.subject");
    if (subjectKind == "namespaces") p.subject.namespaces = LabelSelector::decode(subject[subjectKind], what + ".spec.subject.namespaces");
    else if (subjectKind == "pods") p.subject = namespacedPods(subject[subjectKind], what + ".spec.subject.pods");
    else throw Error(what + ".spec.subject: '" + subjectKind + "' is not namespaces or pods");
    p.ingress = decodeRules(spec, false, baseline, what + ".spec", p.warnings);
    p.egress = decodeRules(spec, true, baseline, what + ".spec", p.warnings);
    return p;
}

}  // namespace

AdminPolicy decodeAdminNetworkPolicy(const json& object) { return decode(object, false); }
AdminPolicy decodeBaselineAdminNetworkPolicy(const json& object) { return decode(object, true); }

const AdminTiers& noAdminTiers() {
    static const AdminTiers kNone;
    return kNone;
}

PolicyNode decodePolicyNode(const json& object) {
    const auto name = nameOf(object, "Node", false).second;
    const auto what = "Node " + name;
    PolicyNode node;
    node.labels = labelsOf(object, what);
    for (const auto& a : listMember(objectMember(object, "status", what), "addresses", what + ".status")) {
        if (!a.is_object()) continue;
        const auto type = a.value("type", "");
        if ((type != "InternalIP" && type != "ExternalIP") || !a.contains("address") || !a["address"].is_string()) continue;
        try {
            node.addresses.push_back(IpPrefix::parse(a["address"].get<std::string>()).host());
        } catch (const Error&) {
            // Not an address (the API server does not check them): it cannot be matched.
        }
    }
    return node;
}

const std::vector<std::string>& adminPolicyFields() {
    static const std::vector<std::string> k{"spec.*", "annotations", kLogAnnotation};
    return k;
}

const std::vector<std::string>& policyNodeFields() {
    static const std::vector<std::string> k{"labels.*", "status", "addresses", "type", "address"};
    return k;
}

std::vector<std::vector<std::string>> samePriority(const AdminPolicies& policies) {
    std::map<int, std::vector<std::string>> byPriority;
    for (const auto& [name, p] : policies) byPriority[p.priority].push_back(name);
    std::vector<std::vector<std::string>> out;
    for (auto& [_, names] : byPriority) {
        if (names.size() > 1) out.push_back(std::move(names));
    }
    return out;
}

}  // namespace kovs::policy
