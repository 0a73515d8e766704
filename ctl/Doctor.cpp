#include "ctl/Doctor.hpp"

#include <fmt/format.h>

#include "base/Error.hpp"

#include "base/UnixJsonRequest.hpp"

namespace kovs::ctl {

using Status = DoctorCheck::Status;

Doctor::Doctor(agent::Config config) : config_(std::move(config)) {
    try {
        resolveUplinkMtu(config_);
    } catch (const Error&) {
        // A gateway.mtu too large for the uplink: the mtu check reports what the devices have.
    }
}

std::vector<DoctorCheck> Doctor::run() {
    std::vector<DoctorCheck> out;
    checkAgent(out);
    checkOvs(out);
    checkTxChecksum(out);
    checkFamilies(out);
    checkGateway(out);
    checkEgress(out);
    checkPeers(out);
    checkRefusedPeers(out);
    checkNetworkd(out);
    return out;
}

void Doctor::checkAgent(std::vector<DoctorCheck>& out) {
    try {
        // Short: doctor is most needed when the agent is hung.
        agentStatus_ = unixJsonRequest(config_.statusSocket, {{"command", "status"}}, 2000);
        out.push_back(ok("agent", "kovs-agent answers on " + config_.statusSocket));
    } catch (const std::exception& e) {
        agentStatus_ = nullptr;
        out.push_back(fail("agent", e.what(), "start kovs-agent (in kind: kubectl -n kovs-system logs ds/kovs-agent)"));
    }
}

std::string toString(DoctorCheck::Status s) {
    switch (s) {
        case Status::Ok: return "ok";
        case Status::Fail: return "FAIL";
        case Status::Skipped: return "skip";
    }
    return "?";
}

std::string formatReport(const std::vector<DoctorCheck>& checks) {
    std::string out;
    size_t failed = 0;
    for (const auto& c : checks) {
        out += fmt::format("  {:<5} {:<14} {}\n", toString(c.status), c.id, c.detail);
        if (c.status == Status::Fail) {
            ++failed;
            out += fmt::format("  {:<5} {:<14} fix: {}\n", "", "", c.hint);
        }
    }
    out += failed ? fmt::format("{} check(s) failed\n", failed) : std::string("all checks passed\n");
    return out;
}

nlohmann::json toJson(const std::vector<DoctorCheck>& checks) {
    auto arr = nlohmann::json::array();
    for (const auto& c : checks) {
        arr.push_back({{"check", c.id}, {"status", toString(c.status)}, {"detail", c.detail}, {"hint", c.hint}});
    }
    return arr;
}

}  // namespace kovs::ctl
