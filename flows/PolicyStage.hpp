#pragma once
// The policy stage of br-int (standalone mode): each side of a new
// connection is judged by three tiers in turn, between the conntrack lookup
// and the commit after them (Table::Commit):
//
//   egress (the sending pod)     AdminEgress -> EgressPolicy -> BaselineEgress
//   ingress (the receiving pod)  AdminIngress -> IngressPolicy -> BaselineIngress
//
// AdminNetworkPolicy rules decide first, in their order (Allow ends the
// side, Deny drops, Pass hands it to NetworkPolicy); NetworkPolicy decides a
// pod that one of the direction selects; the BaselineAdminNetworkPolicy
// decides what is left; what no tier decided is allowed. Only a new
// connection comes here (Table::ConntrackState sends established and related
// packets on), so the replies of an allowed connection pass both ways.
//
// Each compiled rule is one OpenFlow conjunction: clause 1 the pods it
// applies to, clause 2 its peers, clause 3 its ports (a clause that would
// match everything is left out), so a rule costs pods + peers + ports flows.
// NetworkPolicy rules share one priority (any of them allows), so their
// clauses share flows. Each admin rule has its own priority, in the order
// the rules decide, and OVS completes a conjunction only within one: so
// before any tier a new connection's source and destination are classified
// into the admin address sets (Table::PolicySources, ::PolicyDestinations:
// one flow per address, loading a register bit per set it is in), and an
// admin rule's subjects and peers are one flow each, matching its sets'
// bits. A set past the registers' 224 bits a side is matched by its
// addresses instead. A pod selected by a
// NetworkPolicy of a direction and matched by no rule of it is dropped
// there, one flow per pod address and direction (policyDropCookie).
//
// Egress to a Service's ClusterIP is judged after the node's kernel
// translated it: the packet comes back from gw0 with the pod's source and
// the backend's destination, and passes through the egress tables again.
// Traffic from the node itself (gw0 with one of the node's own addresses as
// source: kubelet's probes, hostNetwork pods there) is allowed into the
// node's pods before any tier, as every CNI does.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "flows/Flow.hpp"
#include "flows/PolicyLog.hpp"
#include "policy/PolicyCompiler.hpp"

namespace kovs::flows {

struct PolicyStageInputs {
    int gatewayOfport = -1;
    std::vector<IpPrefix> nodeAddresses;  // gw0's and the node's own (host prefixes)
    std::vector<IpPrefix> serviceCIDRs;   // judged after the kernel's DNAT
    // This node's pods' addresses (host prefixes) with their OpenFlow ports:
    // a drop flow's cookie names its pod by the port.
    std::vector<std::pair<IpPrefix, int>> podPorts;
    // How many admin address sets of each side get a register bit, in the
    // order they were compiled; rules on the others match their addresses.
    // All that fit; tests take fewer, to hold the fallback to the same truth.
    int adminSetBits = kAdminSetBits;
    static constexpr int kAdminSetBits = 32 * kSetRegisters;
    // Policy logging (flows/PolicyLog.hpp): 0 renders no controller action.
    PolicyLogging logging;
};

// The flows of the eight policy tables, unsorted: "priority=200,ip,
// nw_src=10.244.1.5 actions=conjunction(3,1/3)" ... Cookies of the
// conjunctions' flows are kCookiePolicyRule + the rule's id (the packets it
// decided, per rule). What passes goes on to Table::Commit.
std::vector<Flow> renderPolicyStage(const policy::CompiledPolicy& policy, const PolicyStageInputs& in);

constexpr uint64_t kCookiePolicyIngressDrop = 0x6b05;
constexpr uint64_t kCookiePolicyEgressDrop = 0x6b06;
constexpr uint64_t kCookiePolicyRule = 0x6b0000000000;

// A drop flow's cookie: its direction's (kCookiePolicyIngressDrop or
// ...EgressDrop) in the low 48 bits and its pod's OpenFlow port in the top 16,
// so that drops are counted per pod, and so per policy isolating it (a port
// is the pod's for its life; the kernel's ofports stay below 0xff00).
// kCookieLowBits of any kovs cookie names its kind.
constexpr uint64_t kCookieLowBits = 0xffffffffffff;
uint64_t policyDropCookie(bool ingress, int ofport);
struct PolicyDrop {
    bool ingress = true;
    int ofport = 0;
};
// What a drop flow's cookie says; none for any other cookie, and for a drop
// flow without a port (only its direction's total counts it).
std::optional<PolicyDrop> policyDropOf(uint64_t cookie);

// A port range as the fewest value/mask matches ("0x50/0xfff0").
std::vector<std::string> portMasks(int first, int last);

}  // namespace kovs::flows
