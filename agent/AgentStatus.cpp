// What the agent answers: readiness (/readyz, --once), `kovsctl status` and
// /metrics, each the jobs' own answers collected in the order they started.
#include "agent/Agent.hpp"

#include "agent/JobOptions.hpp"

namespace kovs::agent {

std::string Agent::readiness() const {
    if (!bridges_) return "starting";
    for (const auto* j : jobs_) {
        if (auto why = j->notReady(); !why.empty()) return why;
    }
    return "";
}

nlohmann::json Agent::status() const {
    nlohmann::json s;
    s["node"] = config_.node.name;
    s["mode"] = standalone(config_) ? "standalone" : "companion";
    s["uptimeSeconds"] = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - startedAt_).count();
    auto why = readiness();
    s["ready"] = why.empty();
    s["notReadyReason"] = why;
    for (const auto* j : jobs_) j->status(s);
    s["recentRepairs"] = repairs_.recent();
    return s;
}

std::string Agent::metrics() const {
    MetricsText m;
    m.gauge("kovs_up", "1 while the agent runs.", 1);
    m.gauge("kovs_ready", "1 when the node is converged and ready.", readiness().empty() ? 1 : 0);
    m.counter("kovs_loop_callback_errors_total",
              "Event loop callbacks that threw something their job did not handle (logged, then dropped).",
              static_cast<double>(loop_.callbackErrors()));
    repairs_.metrics(m);
    for (const auto* j : jobs_) j->metrics(m);
    return m.str();
}

}  // namespace kovs::agent
