#pragma once
// The policy log (docs/policy.md, "Policy logging"): the packet-ins of the
// logged policies' flows (flows/PolicyLog.hpp), each read once into an entry
// that says when, who to whom, which protocol, the verdict, and the tier,
// policy and rule that decided. Entries are logged at info, kept in a
// bounded ring for `kovsctl policy log [--follow]`, and counted per policy
// and verdict in /metrics.
//
// One new connection, one entry: a denied connection's retries (a SYN sent
// again, the next datagram of a UDP flow) are folded into the entry of the
// same rule, addresses, protocol and ports seen within `foldWindow`, which
// only counts them. What each flood costs is bounded twice: the meter lets
// `ratePktps` packets a second reach the agent (the rest are dropped in the
// datapath and counted by the meter), and the ring and the fold table are
// bounded in size.
//
// It owns the OpenFlow connection (ovs/PacketInClient) and so the meter; it
// turns the flow job's controller actions on only while the meter is set on
// the running vswitchd (PolicyLog.hpp says why).
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>

#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "flows/FlowReconciler.hpp"
#include "ovs/PacketHeaders.hpp"
#include "ovs/PacketInClient.hpp"

namespace kovs::flows {

struct PolicyLoggerOptions {
    std::string socketPath;        // br-int's mgmt socket
    uint32_t meterId = 107;        // 'k', as the conntrack zone
    uint32_t ratePktps = 100;      // packet-ins a second that reach the agent
    size_t entries = 1000;         // the ring
    std::chrono::seconds foldWindow{60};
    size_t foldMax = 4096;         // connections remembered for folding
    std::chrono::milliseconds meterStatsInterval{std::chrono::seconds(10)};
};

struct PolicyLogEntry {
    uint64_t seq = 0;  // from 1, in the order the agent read them
    std::chrono::system_clock::time_point time;
    LoggedDecision decision;
    std::string protocol;              // "TCP"
    std::string source, destination;   // "10.244.1.5:33333"
    std::string sourcePod, destinationPod;  // "ns/name", "" when no pod has the address
    uint64_t packets = 1;              // the first and the retries folded into it
    nlohmann::json json() const;
    // "deny TCP 10.244.1.5:33333 (x/a) -> 10.244.2.7:80 (y/b) ingress by NetworkPolicy y/web rule ..."
    std::string line() const;
};

// What the logger needs of the flow job (FlowReconciler in the agent, a
// stand-in in the unit tests).
struct PolicyLogFlows {
    // What each logging flow of the table rendered last decides.
    std::function<std::shared_ptr<const std::map<uint64_t, LoggedDecision>>()> decisions;
    // Turns the controller actions on (the meter is set) or off.
    std::function<void(const PolicyLogging&)> setLogging;
    static PolicyLogFlows of(FlowReconciler& flows) {
        // The job by pointer: a reference parameter captured by reference
        // does not outlive this call with every compiler.
        FlowReconciler* job = &flows;
        return {[job] { return job->loggedDecisions(); }, [job](const PolicyLogging& l) { job->setPolicyLogging(l); }};
    }
};

class PolicyLogger : public Job {
public:
    // `podAt`: "ns/name" of the pod with this address (host prefix), or "".
    using PodAt = std::function<std::string(const IpPrefix&)>;
    PolicyLogger(EventLoop& loop, PolicyLogFlows flows, PolicyLoggerOptions opts, PodAt podAt);

    void start();
    // Entries after `after` (a seq), oldest first, at most `limit`; and the
    // seq of the last entry, for the next call (kovsctl policy log --follow).
    nlohmann::json entries(uint64_t after, size_t limit) const;

    // A packet-in, as the client hands it over (public for the tests).
    void onPacketIn(const ovs::openflow::PacketIn& p);

    std::string name() const override { return "policyLog"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;

private:
    bool fold(const std::string& key, std::chrono::steady_clock::time_point now);

    PolicyLogFlows flows_;
    PolicyLoggerOptions opts_;
    PodAt podAt_;
    ovs::PacketInClient client_;
    std::deque<PolicyLogEntry> ring_;
    uint64_t nextSeq_ = 1;
    // Connections seen lately: key -> (seq of its entry, last seen).
    std::unordered_map<std::string, std::pair<uint64_t, std::chrono::steady_clock::time_point>> recent_;
    std::deque<std::pair<std::chrono::steady_clock::time_point, std::string>> recentOrder_;
    uint64_t folded_ = 0, unknownCookie_ = 0, unreadable_ = 0;
    // Entries by (tier, policy, verdict), for /metrics.
    std::map<std::tuple<std::string, std::string, std::string>, uint64_t> counts_;
};

}  // namespace kovs::flows
