#pragma once
// What `kovsctl doctor` says of a job's plan. The checks (Doctor*.cpp)
// observe and plan exactly as the jobs do; these pure functions turn the plan
// into findings ("would re-add 10.244.1.1/24 to gw0", "br-int has 0 of 41
// flows"): a non-empty plan is the failure. Kept apart so that every verdict
// and its wording is unit-tested without a node.
#include <optional>
#include <string>
#include <vector>

#include "ctl/DoctorCheck.hpp"
#include "daemons/PacketSocketBuffers.hpp"
#include "gateway/GatewayAddressPlan.hpp"
#include "gateway/GatewayRoutePlan.hpp"
#include "offload/OffloadPlan.hpp"
#include "uplink/UplinkOptions.hpp"
#include "uplink/UplinkStep.hpp"

namespace kovs::ctl {

// "tx-checksum" (and "pod-veth" for host ends on the node's IP stack): one
// failure per repair the offload job would make, per device it cannot read;
// else one ok naming how many devices were checked.
std::vector<DoctorCheck> offloadFindings(const offload::OffloadPlan& plan);

// "socket-buffers": vswitchd's packet sockets against ovs.socketBufferKiB.
DoctorCheck socketBufferFinding(const std::vector<daemons::PacketSocketInfo>& sockets, int kib);

// "gateway": the guard's address and route plans for `gateway`.
struct GatewayDryRun {
    std::string gateway;
    bool adopt = false;  // companion mode: the addresses are another CNI's
    gateway::GatewayAddressPlan addresses;
    gateway::GatewayRoutePlan routes;
};
DoctorCheck gatewayFinding(const GatewayDryRun& run);

// "flows": the bridge's flow count against the table the flow job would install.
DoctorCheck flowsFinding(const std::string& bridge, size_t held, size_t wanted, const std::string& peersFrom);

// "egress": each family's kovs table, counted against the egress job's plan.
struct EgressTableSeen {
    std::string table;  // "table ip kovs"
    size_t held = 0;    // rules the table holds (0: missing)
    size_t wanted = 0;  // rules the job would install
};
// `peersFrom`: where the peers came from; nullopt when they are unknown (then
// only a missing table is a finding: the rule count cannot be judged).
DoctorCheck egressFinding(const std::vector<EgressTableSeen>& tables, const std::optional<std::string>& peersFrom,
                          bool contested);

// "uplink": the uplink job's plan for the node (Uplink::plan).
DoctorCheck uplinkFinding(const uplink::UplinkOptions& opts, const uplink::UplinkPlan& plan);

}  // namespace kovs::ctl
