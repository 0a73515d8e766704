#pragma once
// kovs-cni runs as a short-lived process per pod, so it cannot keep metrics
// itself. After each command it tells the node's kovs-agent what happened, in
// one request line on the agent's status socket:
//
//   {"command": "cni-report", "cni": "ADD", "code": 0, "seconds": 0.0123}
//
// Best effort and never blocking: a missing, stopped or busy agent costs the
// plugin one failed non-blocking connect, and the report is dropped.
#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

namespace kovs::cni {

nlohmann::json agentReport(const std::string& command, int code, std::chrono::nanoseconds took);
// Returns whether the agent accepted the bytes (for tests); never throws.
bool sendAgentReport(const std::string& socketPath, const nlohmann::json& report) noexcept;

}  // namespace kovs::cni
