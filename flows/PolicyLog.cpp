#include "flows/PolicyLog.hpp"

#include <fmt/format.h>

#include <set>

#include "base/Strings.hpp"
#include "flows/PolicyStage.hpp"

namespace kovs::flows {

std::string controllerAction(const PolicyLogging& logging) {
    const uint32_t g = logging.generation;
    return fmt::format("controller(max_len={},userdata={:02x}.{:02x}.{:02x}.{:02x},meter_id={})", kPolicyLogMaxLen, g >> 24,
                       (g >> 16) & 0xff, (g >> 8) & 0xff, g & 0xff, logging.meterId);
}

std::map<uint64_t, LoggedDecision> loggedDecisions(const policy::CompiledPolicy& policy,
                                                   const std::vector<std::pair<IpPrefix, int>>& podPorts) {
    std::map<uint64_t, LoggedDecision> out;
    for (const auto& r : policy.rules) {
        if (!r.log) continue;
        out[kCookiePolicyRule + r.id] = {"NetworkPolicy", r.policy, std::to_string(r.rule),
                                         r.ingress, true};
    }
    for (const auto& r : policy.admin) {
        if (!r.log) continue;
        const char* tier = r.tier == policy::Tier::Baseline ? "BaselineAdminNetworkPolicy" : "AdminNetworkPolicy";
        out[kCookiePolicyRule + r.id] = {tier, r.policy, r.rule, r.ingress, r.action == policy::AdminAction::Allow};
    }
    // A drop flow's cookie names its pod by the port: the policies isolating
    // any of the pod's addresses, as the flow of each address has the same cookie.
    std::map<uint64_t, std::set<std::string>> isolating;
    for (bool ingress : {true, false}) {
        for (const auto& i : ingress ? policy.isolatedIngress : policy.isolatedEgress) {
            if (!i.log) continue;
            int port = 0;
            for (const auto& [address, ofport] : podPorts) {
                if (address == i.address) port = ofport;
            }
            isolating[policyDropCookie(ingress, port)].insert(i.policies.begin(), i.policies.end());
        }
    }
    for (auto& [cookie, policies] : isolating) {
        const bool ingress = (cookie & kCookieLowBits) == kCookiePolicyIngressDrop;
        out[cookie] = {"NetworkPolicy", join(std::vector<std::string>(policies.begin(), policies.end()), ", "), "", ingress, false};
    }
    return out;
}

}  // namespace kovs::flows
