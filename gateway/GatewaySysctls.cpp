#include "gateway/GatewaySysctls.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <spdlog/spdlog.h>

namespace kovs::gateway {
namespace {

struct WantedSysctl {
    const char* key;
    // `now`: gw0's value; `all`: conf/all's ("" when unreadable).
    bool (*ok)(const std::string& now, const std::string& all);
    const char* value;  // written when `ok` says no
};

constexpr WantedSysctl kWanted[] = {
    // The kernel filters by max(all, gw0): a 0 on gw0 under all = 1 is strict.
    {"rp_filter", [](const std::string& v, const std::string& all) { return v == "2" || (v == "0" && all != "1"); }, "2"},
    {"send_redirects", [](const std::string& v, const std::string&) { return v == "0"; }, "0"},
};

std::string readValue(const std::string& path) {
    std::string v;
    std::ifstream(path) >> v;
    return v;
}

}  // namespace

GatewaySysctls::GatewaySysctls(std::string name, std::string confDir)
    : name_(std::move(name)), confDir_(std::move(confDir)) {}

void GatewaySysctls::reconcile(GatewayRepairs& r) {
    for (const auto& want : kWanted) {
        std::string path = confDir_ + "/" + name_ + "/" + want.key;
        auto now = readValue(path);
        if (now.empty()) continue;  // no IPv4 on this link (yet)
        if (want.ok(now, readValue(confDir_ + "/all/" + want.key))) continue;
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

}  // namespace kovs::gateway
