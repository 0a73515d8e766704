#pragma once
// Policy logging in br-int's flows (docs/policy.md, "Policy logging"): a
// policy annotated kovs.dev/log has the flows where its rules decide a new
// connection (a conjunction's action flow; an isolated pod's drop flow) send
// the packet to the agent as well, with
//
//   controller(max_len=128,userdata=<generation>,meter_id=<meter>)
//
// before what they did (the packet is still allowed or dropped as before).
// The meter (one on the bridge, ovs/PacketInClient sets it) bounds what a
// flood costs. vswitchd binds a controller action to its meter when the flow
// is added: a flow added while the meter is missing (a restarted vswitchd
// before the agent set it again) is never metered. So the flow job renders
// controller actions only while the meter is known to be there, and the
// userdata carries the generation of the connection that set it: a new
// generation changes the flows, and the flow job adds them again.
//
// A packet-in carries its flow's cookie: loggedDecisions() says, from the
// same inputs as the render, what each logging cookie's flow decides.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "policy/PolicyCompiler.hpp"

namespace kovs::flows {

struct PolicyLogging {
    uint32_t meterId = 0;     // 0: no logging flows
    uint32_t generation = 0;  // of the OpenFlow connection that set the meter
    bool on() const { return meterId != 0; }
    bool operator==(const PolicyLogging&) const = default;
};

// The bytes of a packet a log entry needs (Ethernet, IPv6 with an extension
// header or two, the ports): not the whole packet.
constexpr int kPolicyLogMaxLen = 128;

// "controller(max_len=128,userdata=00.00.00.07,meter_id=107)".
std::string controllerAction(const PolicyLogging& logging);

// What a logging flow decides.
struct LoggedDecision {
    std::string tier = "NetworkPolicy";  // or "AdminNetworkPolicy", "BaselineAdminNetworkPolicy"
    std::string policy;  // "ns/name" (NetworkPolicy), the name (admin tiers), or for a
                         // drop at an isolated pod the policies isolating it, ", "-joined
    std::string rule;    // the NetworkPolicy rule's index in its direction ("0"), the admin rule's name,
                         // "" for an isolated pod's drop
    bool ingress = true;
    bool allowed = false;
    bool operator==(const LoggedDecision&) const = default;
};

// Cookie -> decision, for the flows renderPolicyStage gives a controller
// action. `podPorts` as PolicyStageInputs::podPorts.
std::map<uint64_t, LoggedDecision> loggedDecisions(const policy::CompiledPolicy& policy,
                                                   const std::vector<std::pair<IpPrefix, int>>& podPorts);

}  // namespace kovs::flows
