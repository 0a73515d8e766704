#include "gateway/GatewaySysctls.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <spdlog/spdlog.h>

namespace kovs::gateway {
namespace {

struct WantedSysctl {
    const char* family;  // "ipv4", "ipv6": net/<family>/conf/<link>/<key>
    const char* key;
    // `now`: gw0's value; `all`: conf/all's ("" when unreadable).
    bool (*ok)(const std::string& now, const std::string& all);
    const char* value;  // written when `ok` says no
    const char* without;  // what may not work while it cannot be written
};

constexpr WantedSysctl kWanted[] = {
    // The kernel filters by max(all, gw0): a 0 on gw0 under all = 1 is strict.
    {"ipv4", "rp_filter", [](const std::string& v, const std::string& all) { return v == "2" || (v == "0" && all != "1"); }, "2",
     "Services with a hostNetwork backend on another node may not answer"},
    {"ipv4", "send_redirects", [](const std::string& v, const std::string&) { return v == "0"; }, "0",
     "pods may be redirected around a Service's DNAT on this node"},
    // gw0 is the pods' IPv6 router: router behaviour on the link (advertisements
    // flagged as a router's), and never an address or route taken from a
    // router advertisement that came in on it.
    {"ipv6", "forwarding", [](const std::string& v, const std::string&) { return v == "1"; }, "1",
     "pods may not see gw0 as their IPv6 router"},
    {"ipv6", "accept_ra", [](const std::string& v, const std::string&) { return v == "0"; }, "0",
     "a router advertisement on gw0 may change the node's IPv6 routes"},
};

std::string readValue(const std::string& path) {
    std::string v;
    std::ifstream(path) >> v;
    return v;
}

}  // namespace

GatewaySysctls::GatewaySysctls(std::string name, std::string netDir) : name_(std::move(name)), netDir_(std::move(netDir)) {}

void GatewaySysctls::reconcile(GatewayRepairs& r) {
    for (const auto& want : kWanted) {
        const std::string conf = netDir_ + "/" + want.family + "/conf/";
        std::string path = conf + name_ + "/" + want.key;
        auto now = readValue(path);
        if (now.empty()) continue;  // no such family on this link (yet), or IPv6 disabled
        if (want.ok(now, readValue(conf + "all/" + want.key))) continue;
        std::ofstream out(path);
        out << want.value << "\n";
        out.close();
        if (out) {
            ++r.sysctl;
            continue;
        }
        auto why = std::string("cannot set ") + want.family + " " + want.key + " to " + want.value + " (" + std::strerror(errno) + ")";
        if (warned_.insert(path).second)
            spdlog::warn("gateway guard {}: {}; {}", name_, why, want.without);
    }
}

}  // namespace kovs::gateway
