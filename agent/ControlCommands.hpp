#pragma once
// The commands of the agent's status socket (agent/StatusServer), whose
// clients are kovsctl and kovs-cni:
//   {"command": "status"}                    -> the agent's status JSON
//   {"command": "cni-report", ...}           -> counted in CniStats
//   {"command": "port-ready", "port": "kovs...", "timeoutMs": 3000}
//                                            -> {"ready": true|false, "why": "..."}
//   {"command": "policy", "pod": "ns/name"}  -> PolicySource::explain
//   {"command": "trace", "from": ..., "to": ...} -> agent/TraceCommand
//   {"command": "policy-log", "after": SEQ, "limit": N}
//                                            -> {"entries": [...], "last": SEQ, "first": SEQ}
// kovs-cni's ADD asks port-ready before it returns, so that a pod's first
// packets find their flows.
#include <nlohmann/json.hpp>

#include <functional>

#include "agent/CniStats.hpp"
#include "agent/StatusServer.hpp"
#include "agent/TraceCommand.hpp"
#include "flows/FlowReconciler.hpp"
#include "flows/PolicyLogger.hpp"
#include "policy/PolicySource.hpp"

namespace kovs::agent {

struct ControlTargets {
    std::function<nlohmann::json()> status;
    CniStats& cni;
    flows::FlowReconciler* flows = nullptr;  // null in companion mode: no flow table to wait for
    const policy::PolicySource* policy = nullptr;  // null where NetworkPolicy is not enforced
    ovs::UnixctlClient* vswitchd = nullptr;        // null without a flow table
    std::string node;                              // this node's name
    const flows::PolicyLogger* policyLog = nullptr;  // null where NetworkPolicy is not enforced
};

StatusServer::Handler controlCommands(ControlTargets targets);

}  // namespace kovs::agent
