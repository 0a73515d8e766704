#include "ctl/Doctor.hpp"

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
#include "base/Ethtool.hpp"
#include "base/IpPrefix.hpp"
#include "base/LinkAddresses.hpp"
#include "base/RtnetlinkClient.hpp"
#include "base/Netns.hpp"
#include "base/Strings.hpp"
#include "egress/EgressReconciler.hpp"
#include "egress/NftablesNat.hpp"
#include "gateway/GatewayAddressPlan.hpp"
#include "gateway/GatewayRoutePlan.hpp"
#include "gateway/NetworkdDropins.hpp"

namespace kovs::ctl {

void Doctor::checkTxChecksum(std::vector<DoctorCheck>& out) {
    const std::string hint = "the userspace datapath drops TCP with checksum offload on; run: ethtool -K {} tx off "
                             "(kovs-agent repairs this by itself; is it running?)";
    auto hostDevices = offloadHostDevices(config_);  // the offload guard's own list
    Ethtool host;
    size_t checked = 0;
    for (const auto& dev : hostDevices) {
        try {
            if (host.txChecksum(dev)) {
                out.push_back(fail("tx-checksum", dev + ": TX checksum offload is on", fmt::format(fmt::runtime(hint), dev)));
            } else {
                ++checked;
            }
        } catch (const std::exception& e) {
            out.push_back(fail("tx-checksum", e.what(), "the device is missing; kovs-agent creates it"));
        }
    }
    for (const auto& p : podPorts_) {
        std::string pod = p["pod"], netns = p["netns"], ifname = p["ifname"];
        try {
            Netns enter(netns);
            Ethtool inPod;
            if (inPod.txChecksum(ifname)) {
                out.push_back(fail("tx-checksum", fmt::format("pod {} ({} in {}): TX checksum offload is on", pod, ifname, netns),
                                   fmt::format(fmt::runtime(hint), "(inside the pod: nsenter --net=" + netns + ") " + ifname)));
            } else {
                ++checked;
            }
        } catch (const std::exception& e) {
            out.push_back(fail("tx-checksum", fmt::format("pod {}: {}", pod, e.what()),
                               "a pod port whose netns is gone: CNI DEL was missed; kovs-cni GC removes it"));
        }
    }
    if (std::none_of(out.begin(), out.end(), [](const auto& c) { return c.id == "tx-checksum"; })) {
        out.push_back(ok("tx-checksum", fmt::format("TX checksum offload is off on all {} devices checked", checked)));
    }
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
    auto addresses = gateway::planGatewayAddresses({opts.addresses, opts.adoptAddresses}, adopted, observed);
    std::vector<std::string> problems;
    if (opts.adoptAddresses && std::none_of(addresses.guarded.begin(), addresses.guarded.end(),
                                            [](const IpPrefix& a) { return a.family == AF_INET; }))
        problems.push_back("no IPv4 address (the CNI that owns it has not addressed it, or it was flushed)");
    for (const auto& a : addresses.add) problems.push_back("address " + a.str() + " missing (the guard would re-add it)");
    for (const auto& a : addresses.remove) problems.push_back("foreign address " + a.str() + " (the guard would remove it)");

    // The routes: the configured extra ones, and in standalone mode the peers'
    // pod CIDRs, as the agent hands them to the guard.
    auto extra = opts.routes;
    std::string origin;
    std::optional<peers::PeerSet> peers;
    if (config_.mode == agent::Config::Mode::Standalone) {
        try {
            peers = knownPeers(origin);
        } catch (const std::exception&) {
            // checkPeers reports an unreadable peer source.
        }
        if (peers) {
            for (auto& r : agent::peerGatewayRoutes(*peers, flowOptions(config_).gatewayAddresses)) extra.push_back(std::move(r));
        }
    }
    std::vector<gateway::ObservedGatewayRoute> routes;
    for (const auto& r : nl.routes(gw)) {
        if (r.type == RTN_UNICAST) routes.push_back({r.dst, {r.gateway}, r.protocol});
    }
    auto desired = gateway::desiredGatewayRoutes(addresses.guarded, extra);
    auto routePlan = gateway::planGatewayRoutes(desired, routes, opts.routesComplete || peers.has_value());
    for (const auto& r : routePlan.add) problems.push_back("route " + r.dst.str() + " missing (the guard would add it)");
    for (auto i : routePlan.remove) problems.push_back("stale kovs route " + routes[i].dst.str() + " (the guard would remove it)");
    if (problems.empty()) {
        out.push_back(ok("gateway", fmt::format("{} has its {}addresses and their routes", gw, opts.adoptAddresses ? "adopted " : "")));
    } else {
        out.push_back(fail("gateway", gw + ": " + join(problems),
                           "the gateway guard restores these within milliseconds; is gateway.guard on and the agent running?"));
    }
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
    gateway::NetworkdDropins dropins(config_.gateway.networkdDropinDir);
    std::vector<std::string> missing;
    for (const auto& n : networkdDropinInterfaces(config_)) {
        if (!std::filesystem::exists(dropins.pathFor(n))) missing.push_back(dropins.pathFor(n));
    }
    if (missing.empty()) {
        out.push_back(ok("networkd", "systemd-networkd runs and the kovs drop-ins keep it away from kovs's interfaces"));
    } else {
        std::string all;
        for (const auto& m : missing) all += (all.empty() ? "" : ", ") + m;
        out.push_back(fail("networkd", "systemd-networkd runs without the drop-ins " + all,
                           "restart kovs-agent (it writes them), then networkctl reload"));
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
    std::vector<std::string> problems, present;
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
        auto wanted = want.keep.size() + want.masquerade.size();
        if (want.empty() && held == 0) continue;
        auto table = "table " + nat.table();
        if (held == 0) {
            problems.push_back(table + " (the egress masquerade) is missing: pods cannot reach beyond the cluster");
        } else if (peers && held != wanted) {
            problems.push_back(fmt::format("{} has {} rules where the egress job would install {} (peers from {})", table, held,
                                           wanted, origin));
        } else {
            present.push_back(table);
        }
    }
    if (!problems.empty()) {
        out.push_back(fail("egress", join(problems, "; "),
                           "kovs-agent restores it within moments (is it running?); `nft list table ip kovs` shows it"));
        return;
    }
    if (!agentStatus_.is_null() && agentStatus_.contains("egress") && agentStatus_["egress"].value("contested", false)) {
        out.push_back(fail("egress", join(present, " and ") + " keep being changed under the agent; their repairs are held back",
                           "find what flushes the nftables ruleset (`nft monitor`), and make it leave kovs's tables alone"));
        return;
    }
    out.push_back(ok("egress", join(present, " and ") + " masquerade" + (present.size() > 1 ? "" : "s") +
                                   " pod traffic leaving the cluster" + (peers ? " (the rules the egress job would install)" : "")));
}

}  // namespace kovs::ctl
