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
#include "base/Ethtool.hpp"
#include "base/IpPrefix.hpp"
#include "base/LinkAddresses.hpp"
#include "base/Netlink.hpp"
#include "base/Netns.hpp"
#include "egress/NftablesNat.hpp"
#include "gateway/NetworkdDropins.hpp"

namespace kovs::ctl {
namespace {

// Addresses of one interface in this netns, as "addr/plen".
std::vector<std::string> addressesOf(nl_sock* sock, int ifindex) {
    nl_cache* raw = nullptr;
    nl::check(rtnl_addr_alloc_cache(sock, &raw), "dump addresses");
    nl::Cache cache(raw);
    std::vector<std::string> out;
    for (auto* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* a = reinterpret_cast<rtnl_addr*>(o);
        if (rtnl_addr_get_ifindex(a) == ifindex) out.push_back(nl::toString(rtnl_addr_get_local(a)));
    }
    return out;
}

bool hasRouteTo(nl_sock* sock, int ifindex, const std::string& dst) {
    nl_cache* raw = nullptr;
    nl::check(rtnl_route_alloc_cache(sock, AF_UNSPEC, 0, &raw), "dump routes");
    nl::Cache cache(raw);
    for (auto* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* r = reinterpret_cast<rtnl_route*>(o);
        if (rtnl_route_get_table(r) != RT_TABLE_MAIN || nl::toString(rtnl_route_get_dst(r)) != dst) continue;
        // Any next hop will do: a multipath route also reaches gw0.
        for (int i = 0; i < rtnl_route_get_nnexthops(r); ++i) {
            if (rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(r, i)) == ifindex) return true;
        }
    }
    return false;
}

}  // namespace

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

void Doctor::checkGateway(std::vector<DoctorCheck>& out) {
    const auto& gw = config_.bridge.gateway;
    int ifindex = static_cast<int>(::if_nametoindex(gw.c_str()));
    if (ifindex == 0) {
        out.push_back(fail("gateway", gw + " does not exist",
                           config_.mode == agent::Config::Mode::Standalone
                               ? "kovs-agent creates it as an OVS internal port; check the agent log"
                               : "it is the other CNI's (companion mode): that CNI creates it, kovs guards it once it exists"));
        return;
    }
    auto sock = nl::connectRoute();
    // The addresses the guard keeps: configured (standalone: the pod CIDR's
    // first), or, on another CNI's device, what the agent adopted from it.
    std::vector<IpPrefix> want;
    bool adopted = false;
    for (const auto& a : gatewayOptions(config_).addresses) want.push_back(a);
    if (gatewayOptions(config_).adoptAddresses) {
        adopted = true;
        if (!agentStatus_.is_null() && agentStatus_.contains("gateway")) {
            for (const auto& a : agentStatus_["gateway"].value("addresses", nlohmann::json::array()))
                want.push_back(IpPrefix::parse(a.get<std::string>()));
        }
    }
    auto have = addressesOf(sock.get(), ifindex);
    std::vector<std::string> problems;
    if (adopted && want.empty() &&
        std::none_of(have.begin(), have.end(), [](const std::string& a) { return a.find(':') == std::string::npos; }))
        problems.push_back("no IPv4 address (the CNI that owns it has not addressed it, or it was flushed)");
    for (const auto& w : want) {
        if (std::find(have.begin(), have.end(), w.str()) == have.end()) problems.push_back("address " + w.str() + " missing");
        else if (!hasRouteTo(sock.get(), ifindex, w.network().str())) problems.push_back("route " + w.network().str() + " missing");
    }
    if (problems.empty()) {
        out.push_back(ok("gateway", fmt::format("{} has its {}addresses and their routes", gw, adopted ? "adopted " : "")));
    } else {
        std::string all;
        for (const auto& p : problems) all += (all.empty() ? "" : ", ") + p;
        out.push_back(fail("gateway", gw + ": " + all,
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

void Doctor::checkEgress(std::vector<DoctorCheck>& out) {
    if (config_.mode != agent::Config::Mode::Standalone || !config_.egress.masquerade) return;
    // A table for each family the node has pods of (IPv4 when it knows none yet).
    std::vector<std::string> missing, present;
    for (int family : {AF_INET, AF_INET6}) {
        bool pods = std::any_of(config_.node.podCIDRs.begin(), config_.node.podCIDRs.end(),
                                [&](const IpPrefix& p) { return p.family == family; });
        if (!pods && !(family == AF_INET && config_.node.podCIDRs.empty())) continue;
        egress::NftablesNat nat(family);
        std::string rules;
        try {
            rules = nat.readBack();
        } catch (const std::exception& e) {
            out.push_back(fail("egress", e.what(), "nftables is not reachable (NET_ADMIN?)"));
            return;
        }
        (rules.empty() ? missing : present).push_back("table " + nat.table());
    }
    auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& t : v) s += (s.empty() ? "" : " and ") + t;
        return s;
    };
    if (!missing.empty()) {
        out.push_back(fail("egress", join(missing) + " (the egress masquerade) " + (missing.size() > 1 ? "are" : "is") +
                                         " missing: pods cannot reach beyond the cluster",
                           "kovs-agent restores it within moments (is it running?); `nft list " + missing.front() + "` shows it"));
        return;
    }
    if (!agentStatus_.is_null() && agentStatus_.contains("egress") && agentStatus_["egress"].value("contested", false)) {
        out.push_back(fail("egress", join(present) + " keep being changed under the agent; their repairs are held back",
                           "find what flushes the nftables ruleset (`nft monitor`), and make it leave kovs's tables alone"));
        return;
    }
    out.push_back(ok("egress", join(present) + " masquerade" + (present.size() > 1 ? "" : "s") + " pod traffic leaving the cluster"));
}

}  // namespace kovs::ctl
