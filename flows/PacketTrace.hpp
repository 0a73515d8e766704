#pragma once
// `kovsctl trace`: one packet, as it enters this node's br-int, traced by
// OVS itself (ofproto/trace, as the first packet of a new connection) and
// each table it went through told in words: the stage, the row's meaning
// (which anti-spoofing check, which NetworkPolicy rule allowed it, which
// drop), and where it left. Pure: the agent resolves the endpoints, runs
// the trace and passes its text here (agent/TraceCommand).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "flows/FlowTable.hpp"
#include "policy/PolicyModel.hpp"

namespace kovs::flows {

struct TracePacket {
    IpPrefix from, to;  // host addresses of one family
    policy::Protocol protocol = policy::Protocol::TCP;
    int port = 80;
};

// The ofproto/trace flow of `p` where it enters br-int on this node: from a
// local pod's port (with its MAC, to gw0's), through the tunnel from the
// peer that owns the source (one of its pods or the node itself), or from
// gw0 (this node, a Service's translation, the world). Throws kovs::Error
// when it does not enter here: a source of a local pod CIDR no pod on this
// node has, or one of another node sent to a destination not on this node
// (trace it on the source's node).
std::string traceFlow(const FlowInputs& in, const TracePacket& p);

struct TraceStep {
    int table = 0;
    std::string stage;    // flows::stageName
    std::string match;    // the row's match as OVS printed it
    int priority = 0;
    uint64_t cookie = 0;
    std::string meaning;  // what the row decided, in words; "" for plumbing
    std::vector<std::string> actions;
};

struct TraceExplained {
    std::vector<TraceStep> steps;
    bool dropped = false;
    std::string verdict;                  // one sentence
    std::optional<IpPrefix> tunnelPeer;   // sent through the tunnel to this node address
};

// Reads ofproto/trace's text (every recirculation, in order). Throws
// kovs::Error when it holds no table at all (not a trace).
TraceExplained explainTrace(const std::string& ofprotoTrace, const FlowInputs& in);

}  // namespace kovs::flows
