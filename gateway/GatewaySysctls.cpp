#include "gateway/GatewaySysctls.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <spdlog/spdlog.h>

namespace kovs {
namespace {

struct WantedSysctl {
    const char* key;
    bool (*ok)(const std::string& now);
    const char* value;  // written when `ok` says no
};

constexpr WantedSysctl kWanted[] = {
    {"rp_filter", [](const std::string& v) { return v != "1"; }, "2"},
    {"send_redirects", [](const std::string& v) { return v == "0"; }, "0"},
};

}  // namespace

GatewaySysctls::GatewaySysctls(std::string name, std::string confDir)
    : name_(std::move(name)), confDir_(std::move(confDir)) {}

void GatewaySysctls::reconcile(GatewayRepairs& r) {
    for (const auto& want : kWanted) {
        std::string path = confDir_ + "/" + name_ + "/" + want.key, now;
        if (!(std::ifstream(path) >> now)) continue;  // no IPv4 on this link (yet)
        if (want.ok(now)) continue;
        std::ofstream out(path);
        out << want.value << "\n";
        out.close();
        if (out) {
            ++r.sysctl;
            continue;
        }
        auto why = std::string("cannot set ") + want.key + " to " + want.value + " (" + std::strerror(errno) + ")";
        if (warned_.insert(want.key).second)
            spdlog::warn("gateway guard {}: {}; Services with a hostNetwork backend on another node may not answer", name_, why);
    }
}

}  // namespace kovs
