#include "agent/ControlCommands.hpp"

#include "base/Error.hpp"
#include "base/InterfaceName.hpp"

namespace kovs::agent {
namespace {

// The flow table's counters for a pod `explain` described: what was dropped
// at it per direction and what each of its rules allowed (as of the last
// read-back of the table).
nlohmann::json withCounts(nlohmann::json explained, const flows::FlowReconciler* flows) {
    if (!flows || !explained.value("realizedHere", false)) return explained;
    std::vector<IpPrefix> addresses;
    for (const auto& a : explained.value("addresses", nlohmann::json::array())) addresses.push_back(IpPrefix::parse(a.get<std::string>()));
    auto counts = flows->policyCounts(addresses);
    for (bool ingress : {true, false}) {
        auto& d = explained[ingress ? "ingress" : "egress"];
        if (d.value("isolated", false)) d["dropped"] = ingress ? counts.droppedIngress : counts.droppedEgress;
        for (const char* list : {"rules", "admin"}) {
            for (auto& r : d[list]) {
                auto it = counts.rulePackets.find(r.value("id", 0u));
                r["packets"] = it == counts.rulePackets.end() ? 0 : it->second;
            }
        }
    }
    return explained;
}

void portReady(flows::FlowReconciler* flows, const nlohmann::json& req, const StatusServer::Reply& reply) {
    auto port = req.value("port", "");
    auto timeout = req.value("timeoutMs", 0);
    if (auto problem = interfaceNameProblem(port); !problem.empty())
        throw Error("port-ready: 'port' must be an interface name, got '" + port + "': " + problem);
    if (timeout < 0 || timeout > 30000) throw Error("port-ready: 'timeoutMs' must be 0-30000");
    if (!flows) return reply({{"ready", true}, {"why", "no flow table on this node (companion mode)"}});
    flows->whenPortReady(port, std::chrono::milliseconds(timeout), [reply](bool ready, const std::string& why) {
        reply({{"ready", ready}, {"why", why}});
    });
}

}  // namespace

StatusServer::Handler controlCommands(ControlTargets t) {
    return [t](const nlohmann::json& req, const StatusServer::Reply& reply) {
        auto cmd = req.value("command", "");
        if (cmd == "status") return reply(t.status());
        if (cmd == "cni-report") {
            t.cni.record(req);
            return reply({{"ok", true}});
        }
        if (cmd == "port-ready") return portReady(t.flows, req, reply);
        if (cmd == "policy") {
            if (!t.policy)
                throw Error("NetworkPolicy is not enforced on this node (standalone mode with peers.source kubernetes and "
                            "networkPolicy.enforce; docs/policy.md)");
            auto pod = req.value("pod", "");
            if (pod.find('/') == std::string::npos) throw Error("policy: 'pod' must be namespace/name, got '" + pod + "'");
            return reply(withCounts(t.policy->explain(pod), t.flows));
        }
        if (cmd == "trace") return traceCommand({t.flows, t.policy, t.vswitchd, t.node}, req, reply);
        if (cmd == "policy-log") {
            if (!t.policyLog)
                throw Error("NetworkPolicy is not enforced on this node, so nothing is logged (docs/policy.md, Policy logging)");
            const auto after = req.value("after", nlohmann::json(0));
            const auto limit = req.value("limit", nlohmann::json(1000));
            if (!after.is_number_integer() || (!after.is_number_unsigned() && after.get<int64_t>() < 0))
                throw Error("policy-log: 'after' must be a sequence number (0 or more)");
            if (!limit.is_number_integer() || limit.get<int64_t>() < 1 || limit.get<int64_t>() > 100000)
                throw Error("policy-log: 'limit' must be 1-100000");
            return reply(t.policyLog->entries(after.get<uint64_t>(), static_cast<size_t>(limit.get<int64_t>())));
        }
        throw Error("unknown command '" + cmd + "' (known: status, cni-report, port-ready, policy, trace, policy-log)");
    };
}

}  // namespace kovs::agent
