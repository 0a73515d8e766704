#include "base/RepairLog.hpp"

#include <ctime>

namespace kovs {

void RepairLog::record(const std::string& kind, const std::string& detail) {
    ++counts_[kind];
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    recent_.push_front({buf, kind, detail});
    if (recent_.size() > kRecent) recent_.pop_back();
}

uint64_t RepairLog::count(const std::string& kind) const {
    auto it = counts_.find(kind);
    return it == counts_.end() ? 0 : it->second;
}

nlohmann::json RepairLog::recent() const {
    auto out = nlohmann::json::array();
    for (const auto& e : recent_) out.push_back({{"time", e.time}, {"kind", e.kind}, {"detail", e.detail}});
    return out;
}

void RepairLog::metrics(MetricsText& out) const {
    for (const auto& [kind, n] : counts_)
        out.counter("kovs_repairs_total", "Repairs made, by kind.", static_cast<double>(n), {{"kind", kind}});
}

}  // namespace kovs
