#pragma once
// kovs-cni runs as a short-lived process per pod, so it cannot keep metrics
// itself. After each command it tells the node's kovs-agent what happened, in
// one request line on the agent's status socket:
//
//   {"command": "cni-report", "cni": "ADD", "code": 0, "seconds": 0.0123}
//
// Best effort and never blocking: a missing, stopped or busy agent costs the
// plugin one failed non-blocking connect, and the report is dropped.
//
// Main-mode ADD also asks the agent whether the new pod's flows are in
// (`port-ready`) and waits for them, bounded: until they are, br-int's ingress
// table drops what the pod sends, and a pod that talks at once (DNS) would
// lose its first packets.
#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

namespace kovs::cni {

nlohmann::json agentReport(const std::string& command, int code, std::chrono::nanoseconds took);
// Returns whether the agent accepted the bytes (for tests); never throws.
bool sendAgentReport(const std::string& socketPath, const nlohmann::json& report) noexcept;

struct PortFlows {
    bool ready = false;  // the agent said so
    std::string why;     // otherwise: what the agent said, or why it could not be asked
};
// Never throws: an agent that is not there (or too old to know the command)
// is not waited for, and the ADD goes on.
PortFlows waitForPortFlows(const std::string& socketPath, const std::string& port, std::chrono::milliseconds timeout) noexcept;

}  // namespace kovs::cni
