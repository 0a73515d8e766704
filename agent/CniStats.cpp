#include "agent/CniStats.hpp"

#include <set>

#include "base/Error.hpp"

namespace kovs::agent {

void CniStats::record(const nlohmann::json& report) {
    // Commands and codes become label values: only the spec's are accepted, so
    // a confused sender cannot grow the metric without bound.
    static const std::set<std::string> commands = {"ADD", "DEL", "CHECK", "GC", "STATUS"};
    auto command = report.value("cni", "");
    if (!commands.count(command)) throw Error("cni-report: 'cni' must be one of ADD, DEL, CHECK, GC, STATUS");
    const auto& code = report.value("code", nlohmann::json());
    if (!code.is_number_integer() || code.get<int64_t>() < 0 || code.get<int64_t>() > 999)
        throw Error("cni-report: 'code' must be a CNI error code (0 for success)");
    const auto& seconds = report.value("seconds", nlohmann::json());
    if (!seconds.is_number() || seconds.get<double>() < 0 || seconds.get<double>() > 3600)
        throw Error("cni-report: 'seconds' must be a duration in seconds");
    ++requests_[{command, code.get<int>()}];
    if (command == "ADD" && code.get<int>() == 0)
        addLatency_.observe(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds.get<double>())));
}

uint64_t CniStats::total() const {
    uint64_t n = 0;
    for (const auto& [_, count] : requests_) n += count;
    return n;
}

void CniStats::metrics(MetricsText& out) const {
    // Each family's samples together (the exposition format requires it);
    // ADD and DEL errors appear from the start, at 0, for alerting rules.
    std::map<std::string, uint64_t> errors{{"ADD", 0}, {"DEL", 0}};
    for (const auto& [key, count] : requests_) {
        const auto& [command, code] = key;
        out.counter("kovs_cni_requests_total", "kovs-cni commands on this node as kovs-cni reported them, by CNI error code (0: success).",
                    static_cast<double>(count), {{"command", command}, {"code", std::to_string(code)}});
        if (code != 0) errors[command] += count;
    }
    for (const auto& [command, count] : errors)
        out.counter("kovs_cni_errors_total", "kovs-cni commands that failed, by command.", static_cast<double>(count), {{"command", command}});
    addLatency_.write(out, "kovs_cni_add_seconds", "Successful kovs-cni ADD duration as kovs-cni measured it.");
}

}  // namespace kovs::agent
