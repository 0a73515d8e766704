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
        throw Error("unknown command '" + cmd + "' (known: status, cni-report, port-ready, policy, trace)");
    };
}

}  // namespace kovs::agent
