#include "ctl/DoctorFindings.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/Strings.hpp"

namespace kovs::ctl {

std::vector<DoctorCheck> offloadFindings(const offload::OffloadPlan& plan) {
    using Aspect = offload::OffloadObservation::Aspect;
    const std::string txHint = "the userspace datapath drops TCP with checksum offload on; kovs-agent turns it off by "
                               "itself (is it running?); by hand: ethtool -K {} tx off";
    std::vector<DoctorCheck> out;
    for (const auto& r : plan.repairs) {
        if (r.aspect == Aspect::HostVeth) {
            out.push_back(fail("pod-veth", r.where + " is on the node's IP stack: the offload guard " + offload::describe(r, true),
                               "with ARP and IPv6 on a pod veth's host end the node answers the pod's ARP and routes its "
                               "packets beside OVS; kovs-agent isolates it by itself (is it running?)"));
            continue;
        }
        auto device = r.netns.empty() ? r.ifname : "(inside the pod: nsenter --net=" + r.netns + ") " + r.ifname;
        out.push_back(fail("tx-checksum", r.where + ": TX checksum offload is on (the offload guard " + offload::describe(r, true) + ")",
                           fmt::format(fmt::runtime(txHint), device)));
    }
    for (const auto& u : plan.unreadable) {
        out.push_back(fail(u.aspect == Aspect::HostVeth ? "pod-veth" : "tx-checksum", u.where + ": " + u.error,
                           u.netns.empty() ? "the device is missing; kovs-agent (or the CNI that owns it) creates it"
                                           : "a pod port whose netns is gone: CNI DEL was missed; kovs-cni GC removes it"));
    }
    if (out.empty())
        out.push_back(ok("tx-checksum", fmt::format("TX checksum offload is off on all {} devices checked", plan.checked)));
    return out;
}

DoctorCheck socketBufferFinding(const std::vector<daemons::PacketSocketInfo>& sockets, int kib) {
    auto small = daemons::undersizedSockets(sockets, kib * 1024);
    if (small.empty())
        return ok("socket-buffers", fmt::format("all {} of vswitchd's packet sockets have {} KiB buffers", sockets.size(), kib));
    std::vector<std::string> named;
    for (const auto& s : small) {
        named.push_back(fmt::format("{} ({} KiB)", s.ifname.empty() ? "send socket" : s.ifname, std::min(s.rcvbuf, s.sndbuf) / 1024));
    }
    return fail("socket-buffers",
                fmt::format("vswitchd packet sockets below {} KiB, which TCP bursts overflow: {} (the socket buffer job "
                            "would enlarge {} of {})",
                            kib, join(named), small.size(), sockets.size()),
                "kovs-agent sizes them on every port change and resync; `kovsctl status` shows why it could not under "
                "socketBuffers (EPERM: grant SYS_PTRACE, docs/kind.md)");
}

DoctorCheck gatewayFinding(const GatewayDryRun& run) {
    std::vector<std::string> problems;
    if (run.adopt && std::none_of(run.addresses.guarded.begin(), run.addresses.guarded.end(),
                                  [](const IpPrefix& a) { return a.family == AF_INET; }))
        problems.push_back("no IPv4 address (the CNI that owns it has not addressed it, or it was flushed)");
    for (const auto& a : run.addresses.add) problems.push_back("address " + a.str() + " missing (the guard would re-add it)");
    for (const auto& a : run.addresses.remove) problems.push_back("foreign address " + a.str() + " (the guard would remove it)");
    auto named = [](const RouteInfo& r) { return r.dst.str() + (r.gateway ? " via " + r.gateway->addressString() : ""); };
    for (const auto& r : run.routes.add) problems.push_back("route " + named(r) + " missing (the guard would add it)");
    for (const auto& r : run.routes.remove) problems.push_back("stale kovs route " + named(r) + " (the guard would remove it)");
    if (problems.empty())
        return ok("gateway", fmt::format("{} has its {}addresses and their routes", run.gateway, run.adopt ? "adopted " : ""));
    return fail("gateway", run.gateway + ": " + join(problems),
                "the gateway guard restores these within milliseconds; is gateway.guard on and the agent running?");
}

DoctorCheck flowsFinding(const std::string& bridge, size_t held, size_t wanted, const std::string& peersFrom) {
    if (held != wanted)
        return fail("flows",
                    fmt::format("{} has {} flows where the flow job would install {} (peers from {})", bridge, held, wanted, peersFrom),
                    "kovs-agent reinstalls the table on its next read-back (is it running?); a deleted or added flow is "
                    "someone else's change to " + bridge);
    return ok("flows", fmt::format("{} holds the {} flows the flow job would install (peers from {})", bridge, wanted, peersFrom));
}

DoctorCheck egressFinding(const std::vector<EgressTableSeen>& tables, const std::optional<std::string>& peersFrom,
                          bool contested) {
    std::vector<std::string> problems, present;
    for (const auto& t : tables) {
        if (t.held == 0) {
            problems.push_back(t.table + " (the egress masquerade) is missing: pods cannot reach beyond the cluster");
        } else if (peersFrom && t.held != t.wanted) {
            problems.push_back(fmt::format("{} has {} rules where the egress job would install {} (peers from {})", t.table,
                                           t.held, t.wanted, *peersFrom));
        } else {
            present.push_back(t.table);
        }
    }
    if (!problems.empty())
        return fail("egress", join(problems, "; "),
                    "kovs-agent restores it within moments (is it running?); `nft list table ip kovs` shows it");
    if (contested)
        return fail("egress", join(present, " and ") + " keep being changed under the agent; their repairs are held back",
                    "find what flushes the nftables ruleset (`nft monitor`), and make it leave kovs's tables alone");
    return ok("egress", join(present, " and ") + " masquerade" + (present.size() > 1 ? "" : "s") + " pod traffic leaving the cluster" +
                            (peersFrom ? " (the rules the egress job would install)" : ""));
}

DoctorCheck uplinkFinding(const uplink::UplinkOptions& opts, const uplink::UplinkPlan& plan) {
    const auto where = opts.device + " / " + opts.bridge;
    if (!plan.blocked.empty()) return fail("uplink", plan.blocked, "remove the port that is in the way, or choose another uplink");
    if (!plan.steps.empty())
        return fail("uplink", where + ": the uplink job would " + join(plan.describeSteps(), "; "),
                    "kovs-agent repairs this a second after it happens (is it running?); someone changed the node's "
                    "addressing, or the shim, behind its back");
    if (!plan.waitingFor.empty())
        return fail("uplink", where + ": waiting for " + plan.waitingFor,
                    "the uplink port is not attached in ovs-vswitchd: see the vswitchd and bridges checks");
    return ok("uplink", fmt::format("the node's addresses are on {} ({} mode), {} holds none", opts.bridge,
                                    uplink::modeName(opts.mode), opts.device));
}

}  // namespace kovs::ctl
