#pragma once
// Every repair a job makes, counted by kind (kovs_repairs_total{kind}) and the
// latest ones kept with their time for `kovsctl status` ("what did the agent
// fix lately, and why"). One per agent, handed to the jobs that repair.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "base/Metrics.hpp"

namespace kovs {

class RepairLog {
public:
    static constexpr size_t kRecent = 20;

    void record(const std::string& kind, const std::string& detail);
    uint64_t count(const std::string& kind) const;
    // [{"time", "kind", "detail"}], newest first.
    nlohmann::json recent() const;
    void metrics(MetricsText& out) const;

private:
    struct Entry {
        std::string time, kind, detail;
    };
    std::map<std::string, uint64_t> counts_;
    std::deque<Entry> recent_;
};

}  // namespace kovs
