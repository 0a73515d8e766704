#pragma once
// What kovs-cni reported about its commands on this node (see
// offload/cni/AgentReport.hpp), for /metrics: requests by command and result
// (the CNI error code), and the ADD latency as kovs-cni measured it.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "agent/Metrics.hpp"

namespace kovs {

class CniStats {
public:
    // Records one {"command": "cni-report", ...} request; throws kovs::Error
    // naming the field when it is malformed (the agent replies with it).
    void record(const nlohmann::json& report);
    void write(MetricsText& out) const;
    uint64_t total() const;

private:
    std::map<std::pair<std::string, int>, uint64_t> requests_;  // (command, CNI error code or 0)
    LatencyHistogram addLatency_;
};

}  // namespace kovs
