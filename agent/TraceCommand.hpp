#pragma once
// {"command": "trace", "from": F, "to": T, "protocol": "TCP", "port": 80,
//  "family": 0|4|6} (kovsctl trace): F and T are a pod ("namespace/name":
// every pod where NetworkPolicy is enforced, else this node's pods as
// kovs-cni recorded them) or an address. The packet is traced on br-int by
// vswitchd itself (ofproto/trace, the first packet of a new connection) and
// explained (flows/PacketTrace). Replies
//   {"node": "<this node>", "from": {"given", "address", "pod", "node"}, "to": {...},
//    "packet": "<the flow traced>", "steps": [...], "dropped": bool, "verdict": "...",
//    "tunnelPeer": "172.18.0.3", "ofproto": "<OVS's text>"}
// An end's "node" is the node a pod runs on, where the API tells it: a trace
// from a pod of another node is its packet as it arrives here.
// or throws kovs::Error (a bad request, an end it cannot resolve, a packet
// that never enters br-int here).
#include <nlohmann/json.hpp>

#include "agent/StatusServer.hpp"
#include "flows/FlowReconciler.hpp"
#include "ovs/UnixctlClient.hpp"
#include "policy/PolicySource.hpp"

namespace kovs::agent {

struct TraceTargets {
    const flows::FlowReconciler* flows = nullptr;  // null in companion mode: nothing of kovs's to trace
    const policy::PolicySource* policy = nullptr;  // null where NetworkPolicy is not enforced
    ovs::UnixctlClient* vswitchd = nullptr;
    std::string node;  // this node's name
};

void traceCommand(const TraceTargets& t, const nlohmann::json& req, const StatusServer::Reply& reply);

}  // namespace kovs::agent
