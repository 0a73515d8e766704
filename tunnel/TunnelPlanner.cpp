#include "tunnel/TunnelPlanner.hpp"

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <algorithm>

#include "base/Error.hpp"
#include "base/Strings.hpp"

namespace kovs::tunnel {
namespace {

bool isIPv6(const std::string& ip) { return ip.find(':') != std::string::npos; }

bool isHostRoute(const std::string& prefix) {
    auto slash = prefix.find('/');
    return slash != std::string::npos && prefix.substr(slash + 1) == (isIPv6(prefix) ? "128" : "32");
}

std::string ipOf(const std::string& prefix) { return prefix.substr(0, prefix.find('/')); }

// The cover the bridge needs (isCoverAddress), and which peers' next hops
// no address holds even then (IPv6): those go to noPath.
void planCover(const std::vector<AddressInfo>& addresses, TunnelPlan& plan) {
    std::optional<IpPrefix> source;  // the first IPv4 address: the tunnel's source
    auto held = [&](const std::string& hop) {
        auto ip = IpPrefix::parse(hop);
        return std::any_of(addresses.begin(), addresses.end(), [&](const AddressInfo& a) {
            return !isCoverAddress(a) && a.family() == ip.family && a.local.network().contains(ip);
        });
    };
    bool needed = false;
    for (const auto& a : addresses)
        if (!source && a.family() == AF_INET && !isCoverAddress(a) && a.scope == RT_SCOPE_UNIVERSE) source = a.local;
    for (auto it = plan.hops.begin(); it != plan.hops.end();) {
        const auto& [peer, hop] = *it;
        bool v6 = isIPv6(hop);
        bool family = std::any_of(addresses.begin(), addresses.end(),
                                  [&](const AddressInfo& a) { return a.family() == (v6 ? AF_INET6 : AF_INET); });
        if (!family || held(hop)) {
            ++it;
        } else if (!v6 && source) {
            needed = true;
            plan.coverHolds.insert(hop);
            ++it;
        } else {
            plan.noPath[peer] = "no address on the bridge holds its next hop " + hop +
                                " (OVS 3.1 routes a tunnel only from an address whose prefix holds the next hop)";
            it = plan.hops.erase(it);
        }
    }
    std::optional<AddressInfo> want;
    if (needed) {
        want = AddressInfo{};
        want->local = *source;
        want->local.prefixLen = 0;
        want->scope = RT_SCOPE_HOST;
        want->flags = IFA_F_NOPREFIXROUTE;
    }
    bool have = false;
    for (const auto& a : addresses) {
        if (!isCoverAddress(a)) continue;
        if (want && a.sameAddress(*want)) {
            have = true;
        } else {
            plan.coverDelete.push_back(a);
        }
    }
    plan.cover = want;
    if (want && !have) plan.coverAdd = want;
}

}  // namespace

bool isCoverAddress(const AddressInfo& a) { return a.local.prefixLen == 0 && a.scope == RT_SCOPE_HOST; }

std::string hostRoute(const std::string& ip) { return ip + (isIPv6(ip) ? "/128" : "/32"); }

std::vector<ovs::UnixctlCommand> TunnelPlan::commands() const {
    std::vector<ovs::UnixctlCommand> out;
    for (const auto& s : steps) out.push_back(s.command);
    return out;
}

std::set<std::string> TunnelPlan::nextHops() const {
    std::set<std::string> out;
    for (const auto& [ip, hop] : hops) out.insert(hop);
    return out;
}

bool TunnelPlan::hasNeighbour(const std::string& peer) const {
    auto h = hops.find(peer);
    return h != hops.end() && neighboured.count(h->second) > 0;
}

void observeKernel(Underlay& underlay, const std::string& bridge, const std::set<std::string>& peerIPs,
                   TunnelObserved& observed) {
    try {
        observed.kernelMacs = underlay.resolved(bridge);
    } catch (const Error&) {
        // No bridge, no MACs: every next hop then shows up unresolved.
    }
    try {
        observed.bridgeAddresses = underlay.addresses(bridge);
    } catch (const Error&) {
        // No bridge, no addresses: no cover is planned (nothing to put it on).
    }
    for (const auto& ip : peerIPs) observed.paths[ip] = underlay.pathTo(ip);
}

TunnelPlan planTunnel(const TunnelDesired& desired, const TunnelObserved& observed, const TunnelMemory& memory) {
    using Kind = TunnelStep::Kind;
    const auto& br = desired.bridge;
    const auto& peers = desired.peerIPs;
    TunnelPlan plan;
    plan.memory = memory;
    // A new vswitchd (or the first one seen) holds nothing kovs set.
    if (observed.vswitchdPid != memory.vswitchdPid) {
        plan.vswitchdRestarted = memory.vswitchdPid > 0;
        plan.memory.vswitchdPid = observed.vswitchdPid;
        plan.memory.ownedNeighbours.clear();
    }

    // Paths: the kernel's route to each peer, the next hop it goes through.
    static const PeerPath onLink;
    std::map<std::string, const PeerPath*> paths;
    for (const auto& ip : peers) {
        auto p = observed.paths.find(ip);
        const PeerPath& path = p == observed.paths.end() ? onLink : p->second;
        if (!path.problem.empty()) {
            plan.noPath[ip] = path.problem;
            continue;
        }
        plan.hops[ip] = path.hop(ip);
    }
    planCover(observed.bridgeAddresses, plan);
    for (const auto& [ip, hop] : plan.hops) paths[ip] = observed.paths.count(ip) ? &observed.paths.at(ip) : &onLink;
    const auto hops = plan.nextHops();

    // Next hop MACs: the kernel's, else the last one it had (an entry the
    // kernel is re-resolving is briefly absent), else none yet.
    plan.memory.macs.clear();
    for (const auto& hop : hops) {
        if (auto k = observed.kernelMacs.find(hop); k != observed.kernelMacs.end()) {
            plan.memory.macs[hop] = k->second;
        } else if (auto m = memory.macs.find(hop); m != memory.macs.end()) {
            plan.memory.macs[hop] = m->second;
        }
    }
    for (const auto& [ip, hop] : plan.hops) {
        if (observed.kernelMacs.count(hop)) continue;
        plan.resolve.insert(ip);
        if (!plan.memory.macs.count(hop)) plan.unresolved.insert(ip);
    }

    // Routes: ours are the unmarked host routes on the bridge.
    for (const auto& [prefix, route] : observed.ovs.userRoutes) {
        if (route.dev != br) continue;
        auto ip = ipOf(prefix);
        if (isHostRoute(prefix) && !peers.count(ip)) {
            plan.steps.push_back({Kind::DeleteRoute, ip, "OVS route " + prefix + " leads to no peer", {"ovs/route/del", {prefix}}});
        }
    }
    for (const auto& [ip, path] : paths) {
        const auto& gw = path->gateway;
        std::string why;
        auto r = observed.ovs.userRoutes.find(hostRoute(ip));
        if (r == observed.ovs.userRoutes.end()) {
            why = "no OVS route";
        } else if (r->second.dev != br) {
            why = "OVS route goes out " + r->second.dev + ", not " + br;
        } else if (r->second.gateway != gw) {
            why = r->second.gateway.empty() ? "OVS route is on-link, the kernel's goes via " + gw
                  : gw.empty()              ? "OVS route goes via " + r->second.gateway + ", the kernel's is on-link"
                                            : "OVS route goes via " + r->second.gateway + ", the kernel's via " + gw;
        } else {
            plan.routed.insert(ip);
            continue;
        }
        // An unmarked ovs/route/add of the same prefix replaces a wrong route.
        std::vector<std::string> args{hostRoute(ip), br};
        if (!gw.empty()) args.push_back(gw);
        plan.steps.push_back({Kind::AddRoute, ip, why, {"ovs/route/add", std::move(args)}});
        plan.routed.insert(ip);
    }

    // Neighbours. One that is no next hop and no peer must go, whether kovs
    // set it or OVS snooped it; only a flush removes it. (A peer without a
    // path keeps its entry: the kernel may be between two routes.)
    std::set<std::string> stale;
    auto addStale = [&](const std::set<std::string>& ips) {
        for (const auto& ip : ips) {
            if (!hops.count(ip) && !peers.count(ip) && observed.ovs.neighbours.count(ip)) stale.insert(ip);
        }
    };
    addStale(plan.memory.ownedNeighbours);
    addStale(memory.formerPeers);
    bool flush = !stale.empty();
    plan.refresh = flush || observed.refreshDue;
    if (flush) {
        plan.steps.push_back({Kind::FlushNeighbours, "", "tunnel neighbour that is no peer's next hop: " + join(stale),
                              {"tnl/neigh/flush", {}}});
    } else {
        for (const auto& [ip, mac] : observed.ovs.neighbours) plan.neighboured.insert(ip);
    }
    for (const auto& [hop, mac] : plan.memory.macs) {
        std::string why;
        auto n = observed.ovs.neighbours.find(hop);
        if (n == observed.ovs.neighbours.end()) {
            why = "no tunnel neighbour";
        } else if (n->second != mac) {
            why = "tunnel neighbour has MAC " + n->second + ", the kernel " + mac;
        } else if (flush) {
            why = "set again after the flush";
        } else if (plan.refresh) {
            why = "refresh before OVS ages it out";
        } else {
            continue;
        }
        plan.steps.push_back({Kind::SetNeighbour, hop, why, {"tnl/neigh/set", {br, hop, mac}}});
        plan.neighboured.insert(hop);
    }
    return plan;
}

TunnelOutcome settleTunnel(const TunnelPlan& plan, const std::vector<ovs::UnixctlReply>& replies) {
    using Kind = TunnelStep::Kind;
    TunnelOutcome out;
    out.memory = plan.memory;
    out.routed = plan.routed;
    out.neighboured = plan.neighboured;
    std::set<std::string> set;
    bool flushPlanned = false;
    std::string first;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const auto& step = plan.steps[i];
        flushPlanned |= step.kind == Kind::FlushNeighbours;
        bool ok = i < replies.size() && replies[i].ok;
        if (ok) {
            if (step.kind == Kind::SetNeighbour) set.insert(step.ip);
            // Flushed once: an entry OVS learns again later for an IP that is
            // no peer is harmless (no route sends tunnels to it) and no reason
            // to flush every peer's neighbour on every pass from now on.
            if (step.kind == Kind::FlushNeighbours) out.memory.formerPeers.clear();
            continue;
        }
        ++out.failures;
        if (first.empty()) {
            first = step.command.describe() + ": " + (i < replies.size() ? replies[i].text : "no reply");
        }
        if (step.kind == Kind::AddRoute) out.routed.erase(step.ip);
        if (step.kind == Kind::SetNeighbour) out.neighboured.erase(step.ip);
    }
    if (flushPlanned) {
        out.memory.ownedNeighbours = set;
    } else {
        out.memory.ownedNeighbours.insert(set.begin(), set.end());
        const auto hops = plan.nextHops();
        std::erase_if(out.memory.ownedNeighbours, [&](const std::string& ip) { return !hops.count(ip); });
    }
    out.refreshed = plan.refresh && out.failures == 0;
    if (out.failures) {
        while (!first.empty() && (first.back() == '\n' || first.back() == ' ')) first.pop_back();
        out.error = std::to_string(out.failures) + " of " + std::to_string(plan.steps.size()) +
                    " unixctl commands failed, first: " + first;
    }
    return out;
}

std::map<std::string, TunnelGap> gapsOf(const TunnelDesired& desired, const TunnelPlan& plan) {
    std::map<std::string, TunnelGap> gaps;
    // The cover first: without it the route steps below cannot succeed.
    if (plan.coverAdd) {
        const auto& c = *plan.coverAdd;
        for (const auto& [peer, hop] : plan.hops) {
            if (!plan.coverHolds.count(hop)) continue;
            gaps[peer].why.push_back("no address on " + desired.bridge + " holds its next hop " + hop +
                                     " (OVS 3.1 needs one; kovs adds " + c.str() + ", scope host)");
            gaps[peer].fixes.push_back("ip addr add " + c.str() + " dev " + desired.bridge + " scope host noprefixroute");
        }
    }
    for (const auto& c : plan.coverDelete) {
        gaps[c.str()].why.push_back("cover address " + c.str() + " on " + desired.bridge + " is no longer needed");
        gaps[c.str()].fixes.push_back("ip addr del " + c.str() + " dev " + desired.bridge);
    }
    for (const auto& step : plan.steps) {
        gaps[step.ip].why.push_back(step.why);
        gaps[step.ip].fixes.push_back("ovs-appctl " + step.command.describe());
    }
    // Neighbour steps are about next hops: each counts for the peers behind it.
    for (const auto& [peer, hop] : plan.hops) {
        if (hop == peer) continue;
        if (auto g = gaps.find(hop); g != gaps.end()) {
            for (auto& w : g->second.why) gaps[peer].why.push_back(w + " (gateway " + hop + ")");
            for (auto& f : g->second.fixes) gaps[peer].fixes.push_back(f);
        }
    }
    for (const auto& [peer, hop] : plan.hops) {
        if (hop != peer && !desired.peerIPs.count(hop)) gaps.erase(hop);
    }
    for (const auto& ip : plan.unresolved) {
        const auto& hop = plan.hops.at(ip);
        gaps[ip].why.push_back(hop == ip ? "no tunnel neighbour (the kernel has no MAC for it on " + desired.bridge + ")"
                                         : "no tunnel neighbour (the kernel has no MAC for its gateway " + hop + " on " +
                                               desired.bridge + ")");
        gaps[ip].fixes.push_back("ping " + ip + (hop == ip ? " (is that node up?)" : " (is the gateway " + hop + " up?)"));
    }
    for (const auto& [ip, problem] : plan.noPath) {
        gaps[ip].why.push_back(problem);
        gaps[ip].fixes.push_back("give this node a route to " + ip + " (ip route get " + ip + " shows none)");
    }
    return gaps;
}

}  // namespace kovs::tunnel
