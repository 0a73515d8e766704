#pragma once
// The egress job (standalone mode): desired = planEgress of the cluster's pod
// CIDRs and node addresses, for each family; observed = the rules of `table ip
// kovs` and `table ip6 kovs` read back from the kernel; apply =
// NftablesNat::replace, one transaction a table (a family without pod CIDRs
// has no table).
//
// Triggers: the peers change (their pod CIDRs and node addresses), any
// nftables ruleset change (NFNLGRP_NFTABLES notifications: someone flushed the
// ruleset, or a kube-proxy resync touched the tables), and the periodic
// resync, all on the job's ReconcileEngine. Someone who keeps removing the
// table is not fought: repairs are admitted by the engine's throttle and the
// status says the table is contested.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "base/ReconcileEngine.hpp"
#include "base/RepairLog.hpp"
#include "base/UniqueFd.hpp"
#include "egress/EgressPlanner.hpp"
#include "egress/NftablesNat.hpp"

namespace kovs::egress {

struct EgressOptions {
    std::vector<IpPrefix> clusterCidrs;   // egress.clusterCIDR; empty: every known pod CIDR
    std::vector<IpPrefix> nonMasquerade;  // egress.nonMasqueradeCIDRs
    std::vector<IpPrefix> localPodCidrs;
    // Where this node's underlay address lives (br-phy once the uplink moved, eth0 before).
    std::vector<std::string> nodeAddressDevices;
    std::chrono::milliseconds resync{std::chrono::seconds(30)};
};

// What planEgress takes: the options, the accepted peers' pod CIDRs and node
// addresses, and this node's addresses as its devices hold them now. The
// egress job and `kovsctl doctor`'s dry run of it read the same inputs the
// same way.
EgressInputs egressInputs(const EgressOptions& opts, const std::vector<IpPrefix>& peerPodCidrs,
                          const std::vector<IpPrefix>& peerNodeAddresses);

class EgressReconciler : public Job {
public:
    EgressReconciler(EventLoop& loop, RepairLog& repairs, EgressOptions opts);
    ~EgressReconciler() override;
    EgressReconciler(const EgressReconciler&) = delete;
    EgressReconciler& operator=(const EgressReconciler&) = delete;

    void start();
    // The accepted peers' pod CIDRs and node addresses.
    void setPeers(std::vector<IpPrefix> podCidrs, std::vector<IpPrefix> nodeAddresses);

    std::string name() const override { return "egress"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;
    std::string notReady() const override;

private:
    // The rules of both families: table ip kovs, table ip6 kovs.
    struct Rules {
        EgressRules v4, v6;
        bool operator==(const Rules&) const = default;
        // "keep ...; masquerade from ...", then "ip6: keep ..." when there are IPv6 pods.
        std::string describe() const;
    };

    void pass();
    void onRulesetEvents();
    Rules plan() const;
    std::string readBack() const;

    EventLoop& loop_;
    RepairLog& repairs_;
    EgressOptions opts_;
    NftablesNat nat4_{AF_INET}, nat6_{AF_INET6};
    std::vector<IpPrefix> peerPodCidrs_, peerNodeAddresses_;

    std::optional<Rules> installed_;
    std::string expected_;  // the rules as read back right after installing them
    uint64_t installs_ = 0;
    uint64_t readBackRepairs_ = 0;
    ReconcileEngine engine_;
    UniqueFd events_;
};

}  // namespace kovs::egress
