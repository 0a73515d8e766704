#include "policy/PolicySource.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace kovs::policy {
namespace {

kube::ListWatchOptions listWatch(kube::ListWatchOptions lw, const char* resource, const char* path, const std::vector<std::string>& fields) {
    lw.resource = resource;
    lw.path = path;
    lw.fields = fields;
    return lw;
}

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
                }) {}

void PolicySource::start(Callback onPolicy) {
    onPolicy_ = std::move(onPolicy);
    namespaces_.start([this](const auto&) { changed(); });
    pods_.start([this](const auto&) { changed(); });
    policies_.start([this](const auto&) { changed(); });
}

void PolicySource::stop() {
    *alive_ = false;
    namespaces_.stop();
    pods_.stop();
    policies_.stop();
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

void PolicySource::compile() {
    const auto began = std::chrono::steady_clock::now();
    auto compiled = compilePolicy(cluster(), nodeName_);
    lastCompileSeconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    ++compiles_;
    compiledPolicies_ = policies_.snapshot().items.size();
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
    auto portText = [](const PortMatch& p) {
        std::string t = protocolName(p.protocol);
        if (p.first == 0) return t + "/any";
        return t + "/" + std::to_string(p.first) + (p.last != p.first ? "-" + std::to_string(p.last) : "");
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
            if (r.ingress != ingress) continue;
            bool applies = std::any_of(r.appliedTo.begin(), r.appliedTo.end(), [&](const IpPrefix& a) {
                return std::find(pod.ips.begin(), pod.ips.end(), a) != pod.ips.end();
            });
            if (!applies) continue;
            nlohmann::json rule{{"id", r.id}, {"policy", r.policy}, {"rule", r.rule}};
            if (r.anyPeer) {
                rule["peers"] = "any";
            } else {
                rule["peers"] = nlohmann::json::array();
                for (const auto& p : r.peers) rule["peers"].push_back(p.str());
            }
            if (r.anyPort) {
                rule["ports"] = "any";
            } else {
                rule["ports"] = nlohmann::json::array();
                for (const auto& p : r.ports) rule["ports"].push_back(portText(p));
            }
            d["rules"].push_back(std::move(rule));
        }
    }
    return out;
}

void PolicySource::status(nlohmann::json& out) const {
    auto& s = out["networkPolicy"];
    s["listed"] = {{"namespaces", namespaces_.listed()}, {"pods", pods_.listed()},
                   {"networkPolicies", policies_.listed()}};
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
}

void PolicySource::metrics(MetricsText& m) const {
    namespaces_.metrics(m);
    pods_.metrics(m);
    policies_.metrics(m);
    m.gauge("kovs_policy_rules", "NetworkPolicy rules realized for this node's pods.", static_cast<double>(compiled_.rules.size()));
    m.counter("kovs_policy_compiles_total", "NetworkPolicy compiles for this node.", static_cast<double>(compiles_));
}

std::string PolicySource::notReady() const {
    std::string missing;
    if (!namespaces_.listed()) missing += " namespaces";
    if (!pods_.listed()) missing += " pods";
    if (!policies_.listed()) missing += " networkpolicies";
    return missing.empty() ? "" : "networkPolicy: not listed yet:" + missing;
}

}  // namespace kovs::policy
