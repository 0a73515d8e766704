#pragma once
// What kovs-cni reported about its commands on this node (see
// cni/AgentReport.hpp), for /metrics: requests by command and result
// (the CNI error code), and the ADD latency as kovs-cni measured it.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "base/Job.hpp"

namespace kovs::agent {

class CniStats : public Job {
public:
    // Records one {"command": "cni-report", ...} request; throws kovs::Error
    // naming the field when it is malformed (the agent replies with it).
    void record(const nlohmann::json& report);
    uint64_t total() const;

    std::string name() const override { return "cni"; }
    void status(nlohmann::json& out) const override { out["cni"] = {{"requests", total()}}; }
    void metrics(MetricsText& out) const override;

private:
    std::map<std::pair<std::string, int>, uint64_t> requests_;  // (command, CNI error code or 0)
    LatencyHistogram addLatency_;
};

}  // namespace kovs::agent
