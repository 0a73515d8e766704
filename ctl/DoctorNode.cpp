#include "ctl/Doctor.hpp"
#include "ctl/DoctorFindings.hpp"

#include <fmt/format.h>

#include "base/Error.hpp"

#include <net/if.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "agent/JobOptions.hpp"
#include "agent/NetworkdInterfaces.hpp"
#include "agent/NodeFamilies.hpp"
#include "agent/PeerFanout.hpp"
#include "base/IpPrefix.hpp"
#include "base/LinkAddresses.hpp"
#include "base/RtnetlinkClient.hpp"
#include "base/Strings.hpp"
#include "egress/EgressReconciler.hpp"
#include "egress/NftablesNat.hpp"
#include "gateway/GatewayAddressPlan.hpp"
#include "gateway/GatewayRoutePlan.hpp"
#include "gateway/NetworkdDropins.hpp"
#include "offload/OffloadPlan.hpp"

namespace kovs::ctl {

// A dry run of the offload job: its observations and plan for the same
// devices (its host devices, the pods on br-int as it finds them).
void Doctor::checkTxChecksum(std::vector<DoctorCheck>& out) {
    for (auto& c : offloadFindings(offload::planOffload(offload::observeOffload(offloadHostDevices(config_), pods_))))
        out.push_back(std::move(c));
}

// A dry run of the gateway guard's address and route steps: their own plans
// (gateway/GatewayAddressPlan, GatewayRoutePlan) from the same inputs (the
// config, the agent's adopted addresses, the peers), against what gw0 holds.
void Doctor::checkGateway(std::vector<DoctorCheck>& out) {
    const auto& gw = config_.bridge.gateway;
    RtnetlinkClient nl;
    if (!nl.link(gw)) {
        out.push_back(fail("gateway", gw + " does not exist",
                           config_.mode == agent::Config::Mode::Standalone
                               ? "kovs-agent creates it as an OVS internal port; check the agent log"
                               : "it is the other CNI's (companion mode): that CNI creates it, kovs guards it once it exists"));
        return;
    }
    auto opts = gatewayOptions(config_);
    // What the guard keeps on another CNI's device: what the agent adopted from it.
    std::vector<IpPrefix> adopted;
    if (opts.adoptAddresses && !agentStatus_.is_null() && agentStatus_.contains("gateway")) {
        for (const auto& a : agentStatus_["gateway"].value("addresses", nlohmann::json::array()))
            adopted.push_back(IpPrefix::parse(a.get<std::string>()));
    }
    std::vector<IpPrefix> observed;
    for (const auto& a : nl.addresses(gw)) observed.push_back(a.local);
    GatewayDryRun run{gw, opts.adoptAddresses, gateway::planGatewayAddresses({opts.addresses, opts.adoptAddresses}, adopted, observed)};

    // The routes, as the agent hands them to the guard (in standalone mode
    // with the peers' pod CIDRs).
    std::string origin;
    std::optional<peers::PeerSet> peers;
    if (config_.mode == agent::Config::Mode::Standalone) {
        try {
            peers = knownPeers(origin);
        } catch (const std::exception&) {
            // checkPeers reports an unreadable peer source.
        }
    }
    run.routes = gateway::planGatewayRoutes(
        gateway::desiredGatewayRoutes(run.addresses.guarded, gatewayRoutes(config_, peers ? &*peers : nullptr)), nl.routes(gw),
        opts.routesComplete || peers.has_value());
    out.push_back(gatewayFinding(run));
    if (!agentStatus_.is_null() && agentStatus_.contains("gateway") && agentStatus_["gateway"].value("mtuContested", false)) {
        out.push_back(fail("gateway-mtu",
                           fmt::format("{}'s MTU keeps being changed under the guard (wanted {}); its repairs are held back", gw,
                                       agentStatus_["gateway"]["mtu"].dump()),
                           "something else sets it: OVS gives an internal port without mtu_request the bridge's smallest MTU. "
                           "Set mtu_request on that port, or leave gateway.mtu unset where the gateway is another CNI's"));
    }
}

// Whether systemd-networkd manages links in this network namespace: a
// networkd process we can see in it, or (where the node's processes are not
// visible, as in kind's agent pod without hostPID) networkd's state file under
// /run/systemd/netif, which the kind manifests mount from the node. Another
// namespace's networkd cannot touch our links.
static bool networkdRunsHere() {
    std::error_code ec;
    auto ours = std::filesystem::read_symlink("/proc/self/ns/net", ec);
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
        std::ifstream comm(e.path() / "comm");
        std::string name;
        if (!(comm >> name) || name != "systemd-network") continue;  // comm is cut at 15 characters
        std::error_code ec2;
        auto theirs = std::filesystem::read_symlink(e.path() / "ns/net", ec2);
        // networkd runs as its own user: without CAP_SYS_PTRACE (a container)
        // its namespace is unreadable, but it shares our pid namespace, so our node.
        if (ec2 == std::errc::permission_denied || (!ec2 && theirs == ours)) return true;
    }
    return std::filesystem::exists("/run/systemd/netif/state", ec);
}

void Doctor::checkNetworkd(std::vector<DoctorCheck>& out) {
    if (!networkdRunsHere()) {
        out.push_back(skipped("networkd", "systemd-networkd does not run on this node"));
        return;
    }
    // A dry run of the drop-ins job, and what would make networkd ignore them.
    gateway::NetworkdDropins dropins(config_.gateway.networkdDropinDir);
    auto interfaces = networkdDropinInterfaces(config_);
    std::vector<std::string> problems;
    for (const auto& l : dropins.missing(interfaces))
        problems.push_back(dropins.pathFor(l) + " is missing or changed (the drop-ins job would write it)");
    for (const auto& l : interfaces) {
        for (const auto& f : dropins.shadowing(l))
            problems.push_back(f + " sorts first and matches " + l.example + ": networkd manages " +
                               (l.example == l.match ? l.match : "the interfaces " + l.match) + " whatever kovs's drop-in says");
    }
    if (problems.empty()) {
        out.push_back(ok("networkd", "systemd-networkd runs and the kovs drop-ins keep it away from kovs's interfaces"));
    } else {
        out.push_back(fail("networkd", join(problems, "; "),
                           "kovs-agent writes its drop-ins again at once (is it running?); rename or narrow a file that "
                           "matches kovs's interfaces first; then networkctl reload"));
    }
}

// The agent's own start-up check: a pod family the node has no address of.
void Doctor::checkFamilies(std::vector<DoctorCheck>& out) {
    if (config_.mode != agent::Config::Mode::Standalone || config_.node.podCIDRs.empty()) return;
    if (auto missing = agent::missingNodeFamily(config_, linkAddresses); !missing.empty()) {
        out.push_back(fail("families", missing,
                           "give the node an address of that family (kind: a network with IPv6 for ipFamily dual or ipv6), "
                           "or drop that pod CIDR from node.podCIDRs; kovs-agent does not start until then"));
        return;
    }
    out.push_back(ok("families", "pod CIDRs " + joinPrefixes(config_.node.podCIDRs) + ": the node has an address of each family"));
}

// A dry run of the egress job: its rules for each family, planned from the
// same inputs (egress::egressInputs of the config and the peers), counted
// against what each table holds.
void Doctor::checkEgress(std::vector<DoctorCheck>& out) {
    if (config_.mode != agent::Config::Mode::Standalone || !config_.egress.masquerade) return;
    std::string origin;
    std::optional<peers::PeerSet> peers;
    try {
        peers = knownPeers(origin);
    } catch (const std::exception&) {
        // checkPeers reports an unreadable peer source.
    }
    auto networks = peers ? agent::peerNetworks(*peers) : agent::PeerNetworks{};
    auto in = egress::egressInputs(egressOptions(config_), networks.podCidrs, networks.nodes);
    std::vector<EgressTableSeen> tables;
    for (int family : {AF_INET, AF_INET6}) {
        auto want = egress::planEgress(in, family);
        egress::NftablesNat nat(family);
        std::string rules;
        try {
            rules = nat.readBack();
        } catch (const std::exception& e) {
            out.push_back(fail("egress", e.what(), "nftables is not reachable (NET_ADMIN?)"));
            return;
        }
        auto held = static_cast<size_t>(std::count(rules.begin(), rules.end(), '\n'));
        if (want.empty() && held == 0) continue;  // a family the cluster does not use
        tables.push_back({"table " + nat.table(), held, want.keep.size() + want.masquerade.size()});
    }
    bool contested = !agentStatus_.is_null() && agentStatus_.contains("egress") && agentStatus_["egress"].value("contested", false);
    out.push_back(egressFinding(tables, peers ? std::optional(origin) : std::nullopt, contested));
}

}  // namespace kovs::ctl
