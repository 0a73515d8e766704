#pragma once
// What every job of the agent (bridge, uplink, tunnel, gateway, offload,
// flows, egress, ...) tells about itself. The agent only wires jobs together;
// `kovsctl status`, /metrics and /readyz are the jobs' own answers, collected.
#include <nlohmann/json.hpp>

#include <string>

#include "base/Metrics.hpp"

namespace kovs {

class Job {
public:
    virtual ~Job() = default;
    // The key of its section in `kovsctl status --json` ("flows", "tunnel", ...).
    virtual std::string name() const = 0;
    virtual void status(nlohmann::json& out) const = 0;
    virtual void metrics(MetricsText& out) const = 0;
    // Why the node is not ready because of this job; "" when it has no objection.
    virtual std::string notReady() const { return ""; }
};

}  // namespace kovs
