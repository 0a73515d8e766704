#include "policy/PolicySource.hpp"

#include <spdlog/spdlog.h>

#include "base/Strings.hpp"

#include <algorithm>
#include <chrono>

namespace kovs::policy {
namespace {

kube::ListWatchOptions listWatch(kube::ListWatchOptions lw, const char* resource, const std::string& path, const std::vector<std::string>& fields,
                                 bool optional = false) {
    lw.resource = resource;
    lw.path = path;
    lw.fields = fields;
    lw.optional = optional;
    return lw;
}

// What an admin policy leaves out is logged as it is read, as for a NetworkPolicy.
std::optional<AdminPolicy> logged(AdminPolicy p, const char* kind) {
    for (const auto& w : p.warnings) spdlog::warn("{}: {}", kind, w);
    return p;
}

constexpr const char* kPolicyApi = "/apis/policy.networking.k8s.io/v1alpha1/";

}  // namespace

PolicySource::PolicySource(EventLoop& loop, kube::KubeCredentials creds, std::string nodeName, kube::ListWatchOptions tuning)
    : loop_(loop),
      nodeName_(std::move(nodeName)),
      namespaces_(loop, creds, listWatch(tuning, "namespaces", "/api/v1/namespaces", namespaceFields()),
                  [](const nlohmann::json& o) { return std::optional<PolicyNamespace>(decodeNamespace(o)); }),
      pods_(loop, creds, listWatch(tuning, "pods", "/api/v1/pods", podFields()), decodePod),
      // What a policy leaves out is logged as it is read: at a list, and
      // when the policy is changed.
      policies_(loop, creds, listWatch(tuning, "networkpolicies", "/apis/networking.k8s.io/v1/networkpolicies", networkPolicyFields()),
                [](const nlohmann::json& o) {
                    auto np = decodeNetworkPolicy(o);
                    for (const auto& w : np.warnings) spdlog::warn("networkPolicy: {}", w);
                    return std::optional<NetworkPolicy>(std::move(np));
                }),
      admin_(loop, creds,
             listWatch(tuning, "adminnetworkpolicies", std::string(kPolicyApi) + "adminnetworkpolicies", adminPolicyFields(), true),
             [](const nlohmann::json& o) { return logged(decodeAdminNetworkPolicy(o), "adminNetworkPolicy"); }),
      baseline_(loop, creds,
                listWatch(tuning, "baselineadminnetworkpolicies", std::string(kPolicyApi) + "baselineadminnetworkpolicies",
                          adminPolicyFields(), true),
                [](const nlohmann::json& o) { return logged(decodeBaselineAdminNetworkPolicy(o), "baselineAdminNetworkPolicy"); }),
      // The peer source lists Nodes too, for other members: its metrics keep "nodes".
      nodes_(loop, creds, listWatch(tuning, "nodes (policy)", "/api/v1/nodes", policyNodeFields()),
             [](const nlohmann::json& o) { return std::optional<PolicyNode>(decodePolicyNode(o)); }) {}

void PolicySource::start(Callback onPolicy) {
    onPolicy_ = std::move(onPolicy);
    namespaces_.start([this](const auto&) { changed(); });
    pods_.start([this](const auto&) { changed(); });
    policies_.start([this](const auto&) { changed(); });
    admin_.start([this](const auto&) { changed(); });
    baseline_.start([this](const auto&) { changed(); });
    nodes_.start([this](const auto&) { changed(); });
}

void PolicySource::stop() {
    *alive_ = false;
    namespaces_.stop();
    pods_.stop();
    policies_.stop();
    admin_.stop();
    baseline_.stop();
    nodes_.stop();
}

// Informer deliveries come one resource at a time; one compile follows a burst.
void PolicySource::changed() {
    if (pending_ || !listed()) return;
    pending_ = true;
    loop_.post([this, alive = alive_] {
        if (!*alive) return;
        pending_ = false;
        compile();
    });
}

AdminTiersView PolicySource::tiers() const {
    const auto& b = baseline_.snapshot().items;
    auto it = b.find("default");
    return {admin_.snapshot().items, it == b.end() ? nullptr : &it->second, nodes_.snapshot().items};
}

void PolicySource::compile() {
    const auto began = std::chrono::steady_clock::now();
    const auto t = tiers();
    auto compiled = compilePolicy(cluster(), nodeName_, t);
    lastCompileSeconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    ++compiles_;
    compiledPolicies_ = policies_.snapshot().items.size();
    if (auto same = samePriority(t.admin); same != samePriority_) {
        for (const auto& names : same)
            spdlog::warn("adminNetworkPolicy: {} share priority {}: the API leaves their order undefined; kovs takes them by name",
                         join(names, ", "), t.admin.at(names.front()).priority);
        samePriority_ = std::move(same);
    }
    if (compiled.adminLeftOut && compiled.adminLeftOut != compiled_.adminLeftOut)
        spdlog::error("adminNetworkPolicy: {} rules left out: past the last of {} rule priorities of a tier and direction here, or "
                      "past {} named-port groups of one rule",
                      compiled.adminLeftOut, kAdminRulesMax, kAdminGroupsMax);
    if (compiles_ > 1 && compiled == compiled_) return;
    compiled_ = std::move(compiled);
    if (onPolicy_) onPolicy_(compiled_);
}

nlohmann::json PolicySource::explain(const std::string& podKey) const {
    nlohmann::json out{{"pod", podKey}, {"node", nodeName_}};
    if (!listed()) {
        out["error"] = notReady();
        return out;
    }
    const auto& pods = pods_.snapshot().items;
    auto it = pods.find(podKey);
    if (it == pods.end()) {
        out["error"] = "no pod " + podKey + " in the API (namespace/name)";
        return out;
    }
    const auto& pod = it->second;
    out["podNode"] = pod.nodeName;
    out["hostNetwork"] = pod.hostNetwork;
    out["addresses"] = nlohmann::json::array();
    for (const auto& ip : pod.ips) out["addresses"].push_back(ip.addressString());
    out["realizedHere"] = pod.nodeName == nodeName_ && !pod.hostNetwork;
    auto appliesTo = [&](const std::vector<IpPrefix>& applied) {
        return std::any_of(applied.begin(), applied.end(),
                           [&](const IpPrefix& a) { return std::find(pod.ips.begin(), pod.ips.end(), a) != pod.ips.end(); });
    };
    auto portsText = [](bool any, const std::vector<PortMatch>& ports) {
        if (any) return nlohmann::json("any");
        auto out = nlohmann::json::array();
        for (const auto& p : ports) {
            std::string t = protocolName(p.protocol);
            out.push_back(p.first == 0 ? t + "/any" : t + "/" + std::to_string(p.first) + (p.last != p.first ? "-" + std::to_string(p.last) : ""));
        }
        return out;
    };
    auto peersText = [](const std::vector<IpPrefix>& peers) {
        auto out = nlohmann::json::array();
        for (const auto& p : peers) out.push_back(p.str());
        return out;
    };
    for (bool ingress : {true, false}) {
        auto& d = out[ingress ? "ingress" : "egress"];
        d["policies"] = nlohmann::json::array();
        d["rules"] = nlohmann::json::array();
        if (pod.hostNetwork) continue;  // never selected: it is its node
        for (const auto& [key, np] : policies_.snapshot().items) {
            if (np.namespaceName != pod.namespaceName || !(ingress ? np.ingress : np.egress) || !np.podSelector.matches(pod.labels)) continue;
            d["policies"].push_back(key);
            if (!np.warnings.empty()) out["warnings"][key] = np.warnings;
        }
        d["isolated"] = !d["policies"].empty();
        for (const auto& r : compiled_.rules) {
            if (r.ingress != ingress || !appliesTo(r.appliedTo)) continue;
            d["rules"].push_back({{"id", r.id},
                                  {"policy", r.policy},
                                  {"rule", r.rule},
                                  {"peers", r.anyPeer ? nlohmann::json("any") : peersText(r.peers)},
                                  {"ports", portsText(r.anyPort, r.ports)}});
        }
        // The admin tiers' rules for it, in the order they decide.
        d["admin"] = nlohmann::json::array();
        for (const auto& r : compiled_.admin) {
            if (r.ingress != ingress || !appliesTo(compiled_.adminSets[r.subjects].addresses)) continue;
            nlohmann::json rule{{"id", r.id},
                                {"tier", r.tier == Tier::Admin ? "AdminNetworkPolicy" : "BaselineAdminNetworkPolicy"},
                                {"policy", r.policy},
                                {"rule", r.rule},
                                {"action", r.action == AdminAction::Allow ? "Allow" : r.action == AdminAction::Deny ? "Deny" : "Pass"},
                                {"peers", peersText(compiled_.adminSets[r.peers].addresses)},
                                {"ports", portsText(r.anyPort, r.ports)}};
            if (auto it = admin_.snapshot().items.find(r.policy); r.tier == Tier::Admin && it != admin_.snapshot().items.end())
                rule["priority"] = it->second.priority;
            d["admin"].push_back(std::move(rule));
        }
    }
    return out;
}

void PolicySource::status(nlohmann::json& out) const {
    auto& s = out["networkPolicy"];
    s["listed"] = {{"namespaces", namespaces_.listed()},
                   {"pods", pods_.listed()},
                   {"networkPolicies", policies_.listed()},
                   {"adminNetworkPolicies", admin_.listed()},
                   {"baselineAdminNetworkPolicies", baseline_.listed()},
                   {"nodes", nodes_.listed()}};
    s["namespaces"] = namespaces_.snapshot().items.size();
    s["pods"] = pods_.snapshot().items.size();
    s["policies"] = compiledPolicies_;
    s["rules"] = compiled_.rules.size();
    s["isolatedAddresses"] = {{"ingress", compiled_.isolatedIngress.size()}, {"egress", compiled_.isolatedEgress.size()}};
    s["compiles"] = compiles_;
    s["lastCompileSeconds"] = lastCompileSeconds_;
    auto& warnings = s["warnings"] = nlohmann::json::object();
    for (const auto& [key, np] : policies_.snapshot().items) {
        if (!np.warnings.empty()) warnings[key] = np.warnings;
    }
    auto& rejected = s["unreadable"] = nlohmann::json::object();
    auto unreadable = [&](const char* resource, const auto& snapshot) {
        for (const auto& [key, why] : snapshot.rejected) rejected[std::string(resource) + " " + key] = why;
    };
    unreadable("namespace", namespaces_.snapshot());
    unreadable("pod", pods_.snapshot());
    unreadable("networkpolicy", policies_.snapshot());
    unreadable("adminnetworkpolicy", admin_.snapshot());
    unreadable("baselineadminnetworkpolicy", baseline_.snapshot());
    // The admin tiers: whether the cluster serves them (their CRDs), what
    // this node realized, and what status must warn of.
    auto& a = s["admin"];
    a["served"] = {{"adminNetworkPolicies", !admin_.listWatch().absent()},
                   {"baselineAdminNetworkPolicies", !baseline_.listWatch().absent()}};
    a["policies"] = admin_.snapshot().items.size();
    a["baseline"] = baseline_.snapshot().items.count("default") == 1;
    a["rules"] = compiled_.admin.size();
    a["addressSets"] = compiled_.adminSets.size();
    a["rulesLeftOut"] = compiled_.adminLeftOut;
    a["samePriority"] = samePriority_;
    auto& aw = a["warnings"] = nlohmann::json::object();
    for (const auto* snapshot : {&admin_.snapshot(), &baseline_.snapshot()}) {
        for (const auto& [key, p] : snapshot->items) {
            if (!p.warnings.empty()) aw[key] = p.warnings;
        }
    }
}

void PolicySource::metrics(MetricsText& m) const {
    namespaces_.metrics(m);
    pods_.metrics(m);
    policies_.metrics(m);
    admin_.metrics(m);
    baseline_.metrics(m);
    nodes_.metrics(m);
    m.gauge("kovs_policy_rules", "NetworkPolicy rules realized for this node's pods.", static_cast<double>(compiled_.rules.size()));
    m.gauge("kovs_policy_admin_rules", "AdminNetworkPolicy and BaselineAdminNetworkPolicy rules realized for this node's pods.",
            static_cast<double>(compiled_.admin.size()));
    m.counter("kovs_policy_compiles_total", "NetworkPolicy compiles for this node.", static_cast<double>(compiles_));
}

std::string PolicySource::notReady() const {
    std::string missing;
    if (!namespaces_.listed()) missing += " namespaces";
    if (!pods_.listed()) missing += " pods";
    if (!policies_.listed()) missing += " networkpolicies";
    if (!admin_.listed()) missing += " adminnetworkpolicies";
    if (!baseline_.listed()) missing += " baselineadminnetworkpolicies";
    if (!nodes_.listed()) missing += " nodes";
    return missing.empty() ? "" : "networkPolicy: not listed yet:" + missing;
}

}  // namespace kovs::policy
