#pragma once
// The flow job (standalone mode): desired = FlowTable::render of the OVSDB
// replica (gateway, tunnel and pod ports with their ofports and addresses)
// and the peers' pod CIDRs; observed = `dump-flows` read back; apply = one
// atomic replace-flows when they differ.
//
// On the job's ReconcileEngine: a changed desired table is installed at once
// (a pod port got its ofport, a peer came or went) by a quick pass; a full
// pass reads the table back: after any OVSDB change that left the desired
// table as it was (a restarted vswitchd has the same ofports and no flows),
// every `readBack` (the engine's resync), on verifySoon() (the agent calls it
// when vswitchd restarts) and on every retry of a failed pass. A pass lasts
// until its ovs-ofctl calls are answered: one runs at a time.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "base/ReconcileEngine.hpp"
#include "base/RepairLog.hpp"
#include "flows/FlowTable.hpp"
#include "flows/OpenFlowBridge.hpp"
#include "flows/PolicyStage.hpp"
#include "ovs/OvsdbReplica.hpp"

namespace kovs::flows {

struct FlowReconcilerOptions {
    std::string bridge = "br-int";
    std::string rundir = "/var/run/openvswitch";
    std::string gatewayPort = "gw0";
    std::string tunnelPort = "tun0";
    std::vector<IpPrefix> gatewayAddresses;  // gw0's, one per family with its pod CIDR's length (FlowInputs)
    bool serviceReplyPath = true;
    std::vector<IpPrefix> serviceCIDRs;  // FlowInputs::serviceCIDRs
    // NetworkPolicy comes from setPolicy: no table is installed before the
    // first one (the bridge keeps the table it has).
    bool waitForPolicy = false;
    // The peers come from a source (a file, the API): no table is installed
    // before its first list. Installed without them, an agent restart would
    // drop every packet to another node's pods until the list came (the
    // bridge keeps the table it has meanwhile).
    bool waitForPeers = false;
    std::chrono::milliseconds readBack{std::chrono::seconds(30)};
    // Each ovs-ofctl call: a vswitchd that does not answer by then is given up on (and retried).
    std::chrono::milliseconds ofctlTimeout{std::chrono::seconds(10)};
};

// What FlowTable::render takes, from the replica (the ports, their ofports
// and addresses), the peers and NetworkPolicy (none: no policy stage): the
// agent's flow job and `kovsctl doctor`'s dry run of it read the same inputs
// the same way.
FlowInputs flowInputs(const FlowReconcilerOptions& opts, const ovs::OvsdbReplica& replica, std::vector<FlowPeer> peers,
                      const policy::CompiledPolicy* policy = nullptr);

class FlowReconciler : public Job {
public:
    FlowReconciler(EventLoop& loop, const ovs::OvsdbReplica& replica, RepairLog& repairs, FlowReconcilerOptions opts);
    ~FlowReconciler() override;
    FlowReconciler(const FlowReconciler&) = delete;
    FlowReconciler& operator=(const FlowReconciler&) = delete;

    // First install and the periodic read-back.
    void start();
    // The peers, already validated (peers/PeerFilter).
    void setPeers(std::vector<FlowPeer> peers);
    // What NetworkPolicy says about this node's pods (policy/PolicySource).
    void setPolicy(policy::CompiledPolicy policy);
    // Policy logging's meter and its generation (flows/PolicyLog.hpp); off
    // (meterId 0) while the meter is not known to be on the bridge.
    void setPolicyLogging(PolicyLogging logging);
    // What each logging flow of the table rendered last decides, by cookie.
    std::shared_ptr<const std::map<uint64_t, LoggedDecision>> loggedDecisions() const { return decisions_; }
    // The replica changed.
    void onDatabaseChange();
    // Read the table back soon (coalesced): vswitchd restarted, or may have.
    void verifySoon();
    // kovs-cni's ADD waits for this, so a pod's first packets are not dropped
    // by the ingress table before its flows exist: done(true, "") once the
    // port's flows are installed, done(false, why) after `timeout`.
    using PortReady = std::function<void(bool ready, const std::string& why)>;
    void whenPortReady(const std::string& port, std::chrono::milliseconds timeout, PortReady done);

    // The table's inputs as they stand now, policy included (kovsctl trace
    // explains a trace with them), and the bridge they are for.
    FlowInputs currentInputs() const;
    const std::string& bridge() const { return opts_.bridge; }

    std::string name() const override { return "flows"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;
    std::string notReady() const override;

    // For tests: the table as last rendered.
    std::string desired() const { return flowText(*desired_); }

    // What the NetworkPolicy stage counted for a pod (its addresses), as of
    // the last read-back of the table: the first packets of new connections
    // dropped at it per direction (no rule allowed them), and each rule's
    // allowed packets by rule id.
    struct PolicyCounts {
        uint64_t droppedIngress = 0, droppedEgress = 0;
        std::map<uint32_t, uint64_t> rulePackets;
    };
    PolicyCounts policyCounts(const std::vector<IpPrefix>& podAddresses) const;

private:
    using Done = ReconcileEngine::Done;
    // Renders; installs when the table differs from the last installed one, or
    // when a full pass's read-back shows that the bridge holds another.
    void pass(bool full, Done done);
    void install(Done done);
    ReconcileEngine::Result failed(const std::string& why);
    void inputChanged();
    void countDrops(const FlowDump& dump);
    void notifyWaiters();
    // What the table waits for before its first install ("" for nothing).
    std::string waitingFor() const;

    EventLoop& loop_;
    const ovs::OvsdbReplica& replica_;
    RepairLog& repairs_;
    FlowReconcilerOptions opts_;
    OpenFlowBridge bridge_;
    std::vector<FlowPeer> peers_;
    bool peersKnown_ = false;
    std::optional<policy::CompiledPolicy> policy_;
    PolicyLogging logging_;
    bool replaceWhole_ = false;  // the next install is whole (setPolicyLogging says why)
    std::shared_ptr<const std::map<uint64_t, LoggedDecision>> decisions_ = std::make_shared<const std::map<uint64_t, LoggedDecision>>();
    std::map<std::string, std::string> holders_;  // the last render's, for the next (FlowInputs::holders)
    bool starting_ = false;

    // The table rendered last, and the one sent last: at rest the same flows,
    // held once (a few hundred KiB with 1000 policy flows).
    std::shared_ptr<const std::vector<Flow>> desired_ = std::make_shared<const std::vector<Flow>>();
    std::shared_ptr<const std::vector<Flow>> installed_;  // null: unknown, the next install is whole
    std::set<std::string> installedPorts_;  // pod ports with their flows in it
    std::set<std::string> desiredPorts_;
    size_t expectedDump_ = 0;  // hash of what dump-flows showed right after that
    size_t expectedCount_ = 0;
    std::vector<std::string> skipped_, skippedLogged_;
    uint64_t installs_ = 0;
    uint64_t inputChanges_ = 0, renderedInputs_ = 0;  // status' upToDate: no change waits for a pass
    std::chrono::system_clock::time_point lastInstall_{};
    uint64_t readBackRepairs_ = 0;
    // Packets each NetworkPolicy rule's conjunction flow allowed, as of the
    // last read-back (key: its cookie).
    std::map<uint64_t, uint64_t> rulePackets_;
    // Packets NetworkPolicy dropped at each pod (ingress?, its ofport), as of
    // the last read-back: its drop flows' counters (policyDropCookie).
    std::map<std::pair<bool, int>, uint64_t> dropsAt_;
    // This node's pods' addresses (host prefixes) by ofport, from the replica.
    std::map<int, std::vector<IpPrefix>> podAddressesByPort() const;
    // Drop counters survive the flows' own counters being reset (reinstall, vswitchd restart).
    struct DropCounter {
        uint64_t cookie;
        const char* statusKey;  // in status' flows.dropped
        const char* reason;     // the metric's label
        uint64_t base = 0, last = 0;
        uint64_t total() const { return base + last; }
    };
    std::vector<DropCounter> drops_{{FlowTable::kCookieTunnelUnknownSource, "tunnelUnknownSource", "tunnel_unknown_source"},
                                    {FlowTable::kCookieTunnelForgedSource, "tunnelForgedSource", "tunnel_forged_source"},
                                    {FlowTable::kCookiePodSpoofed, "podSpoofed", "pod_spoofed"},
                                    {FlowTable::kCookiePodRouterMessage, "podRouterMessage", "pod_router_message"},
                                    {kCookiePolicyIngressDrop, "policyIngress", "policy_ingress"},
                                    {kCookiePolicyEgressDrop, "policyEgress", "policy_egress"}};

    ReconcileEngine engine_;
    struct Waiter {
        std::string port;
        EventLoop::TimerId timer;
        PortReady done;
    };
    std::map<uint64_t, Waiter> waiters_;
    uint64_t nextWaiter_ = 0;
};

}  // namespace kovs::flows
