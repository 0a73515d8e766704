#include "ctl/Doctor.hpp"

#include <fmt/format.h>

#include "agent/JobOptions.hpp"
#include "agent/PeerFanout.hpp"
#include "base/Error.hpp"
#include "base/EventLoop.hpp"
#include "base/RtnetlinkClient.hpp"
#include "base/Strings.hpp"
#include "peers/PeerFilter.hpp"

#include "ovs/UnixctlClient.hpp"
#include "peers/PeerFile.hpp"
#include "tunnel/Underlay.hpp"
#include "tunnel/OvsTunnelState.hpp"
#include "tunnel/TunnelPlanner.hpp"

namespace kovs::ctl {

// The peers this node's jobs work from: the agent's accepted set, or when it
// does not answer (stopped, hung, crash-looping) what the agent's own peer
// source (the peer file, or the Kubernetes API through the agent's
// credentials) delivers, through the agent's own peer filter.
std::optional<peers::PeerSet> Doctor::knownPeers(std::string& origin) const {
    if (!knownPeers_) {
        KnownPeers k;
        k.peers = loadPeers(k.origin);  // a peer file that does not parse throws, and is not kept
        knownPeers_ = std::move(k);
    }
    origin = knownPeers_->origin;
    return knownPeers_->peers;
}

std::optional<peers::PeerSet> Doctor::loadPeers(std::string& origin) const {
    peers::PeerSet peers;
    if (!agentStatus_.is_null() && agentStatus_.contains("peers")) {
        origin = "the agent";
        for (const auto& p : agentStatus_["peers"]) {
            peers::Peer peer;
            peer.name = p.value("name", "");
            auto what = "the agent's peer " + peer.name;
            for (const auto& ip : p.value("nodeIPs", nlohmann::json::array()))
                peer.nodeIPs.push_back(peers::parseNodeIP(ip.get<std::string>(), what));
            for (const auto& c : p.value("podCIDRs", nlohmann::json::array()))
                peer.podCIDRs.push_back(peers::parsePodCIDR(c.get<std::string>(), what));
            if (!peer.nodeIPs.empty()) peers.emplace(peer.name, std::move(peer));
        }
        return peers;
    }
    if (config_.peers.source == agent::Config::PeerSourceKind::File) {
        // A file that does not parse is the finding (the source would only log it).
        origin = config_.peers.file + " (the agent did not answer)";
        return peers::filterPeers(peers::readPeerFile(config_.peers.file), agent::peerFilterOptions(config_)).accepted;
    }
    if (config_.peers.source == agent::Config::PeerSourceKind::None) {
        origin = "no peer source is configured";
        return std::nullopt;
    }
    auto api = config_.peers.kubeconfig.empty() ? std::string("the in-cluster credentials") : config_.peers.kubeconfig;
    try {
        EventLoop loop;
        auto source = agent::makePeerSource(loop, config_);
        std::optional<peers::PeerSet> listed;
        source->start([&](const peers::PeerSet& all, const std::vector<peers::RejectedPeer>&) {
            listed = peers::filterPeers(all, agent::peerFilterOptions(config_)).accepted;
        });
        loop.runUntil([&] { return listed.has_value(); }, kPeerListTimeout);
        source->stop();
        if (listed) {
            origin = "the Kubernetes API's Nodes (the agent did not answer)";
            return listed;
        }
        origin = fmt::format("the agent did not answer, and the Kubernetes API listed no Nodes within {} s through {}",
                             kPeerListTimeout.count() / 1000, api);
    } catch (const std::exception& e) {
        origin = fmt::format("the agent did not answer, and the Kubernetes API cannot be asked through {}: {}", api, e.what());
    }
    return std::nullopt;
}

// A dry run of the tunnel job: observe as it does, plan with no memory of
// earlier passes; every step of the plan is something vswitchd lacks.
void Doctor::checkPeers(std::vector<DoctorCheck>& out) {
    std::string origin;
    std::optional<peers::PeerSet> peers;
    try {
        peers = knownPeers(origin);
    } catch (const std::exception& e) {
        out.push_back(fail("peers", e.what(), "fix the peer file; kovs-agent logs the same error"));
        return;
    }
    if (!peers) {
        out.push_back(skipped("peers", origin + ": the peer list is unknown"));
        return;
    }
    const auto& bridge = config_.bridge.physical;
    tunnel::TunnelDesired desired{bridge, {}};
    for (const auto& [name, p] : *peers) desired.peerIPs.insert(p.tunnelAddress());
    tunnel::TunnelObserved observed;
    try {
        auto shown = ovs::BlockingUnixctlClient(config_.ovs.rundir).pipeline(tunnel::ovsTunnelReadBack());
        observed.vswitchdPid = shown.pid;
        observed.ovs = tunnel::parseOvsTunnelReadBack(shown, bridge);
    } catch (const std::exception& e) {
        out.push_back(skipped("peers", std::string("ovs-vswitchd not reachable: ") + e.what()));
        return;
    }
    tunnel::KernelUnderlay underlay;
    tunnel::observeKernel(underlay, bridge, desired.peerIPs, observed);
    auto gaps = tunnel::gapsOf(desired, tunnel::planTunnel(desired, observed, {}));
    const std::string byAgent = "kovs-agent's tunnel job repairs this on its next pass (is it running?); by hand: ";
    size_t failed = 0;
    for (const auto& [name, p] : *peers) {
        auto ip = p.tunnelAddress();
        auto g = gaps.find(ip);
        if (g == gaps.end()) continue;
        ++failed;
        out.push_back(fail("peers", fmt::format("peer {} ({}): {}", name, ip, join(g->second.why, ", ")),
                           byAgent + join(g->second.fixes, "; ")));
        gaps.erase(g);
    }
    for (const auto& [ip, gap] : gaps) {  // routes to IPs that are no peer
        ++failed;
        out.push_back(fail("peers", join(gap.why, ", "), byAgent + join(gap.fixes, "; ")));
    }
    // A path narrower than the uplink (a route with an mtu): the userspace
    // datapath sends tunnel packets with DF set and does not shrink them, so
    // pod packets too large for it are lost on the way. (An ICMP
    // "fragmentation needed" for a tunnel packet leaves no trace in the
    // kernel's routes: no socket of the node sent it.) Where uplink.mtu is
    // left to the device, the agent sizes gw0 (and new pods) from the
    // narrowest path: a finding only while gw0 is still wider. Where it, or
    // gateway.mtu, is set by hand: against that; one set to the narrow path is
    // the fix, not a finding.
    const auto narrowest = tunnel::narrowestPath(observed.paths);
    const int want = config_.gatewayMtu(narrowest.mtu);
    const bool follows = want < config_.gatewayMtu();
    int gatewayMtu = 0;
    try {
        if (auto l = RtnetlinkClient().link(config_.bridge.gateway)) gatewayMtu = static_cast<int>(l->mtu);
    } catch (const std::exception&) {
    }
    const int uplinkMtu = config_.uplink.mtu;  // resolved: set by hand, else eth0's (which br-phy wears)
    const int overhead = config_.tunnelOverhead();
    for (const auto& [name, p] : *peers) {
        auto path = observed.paths.find(p.tunnelAddress());
        if (path == observed.paths.end() || path->second.mtu == 0) continue;
        const int mtu = static_cast<int>(path->second.mtu);
        if (follows) {
            if (p.tunnelAddress() != narrowest.peer || gatewayMtu == 0 || gatewayMtu <= want) continue;
            ++failed;
            out.push_back(fail("peers",
                               fmt::format("peer {} ({}): the path's MTU is {}, {} bytes below the uplink's {}, and {} is "
                                           "still at {} (pod packets over {} bytes to it are lost)",
                                           name, p.tunnelAddress(), mtu, uplinkMtu - mtu, uplinkMtu,
                                           config_.bridge.gateway, gatewayMtu, want),
                               fmt::format("kovs-agent lowers {} to {} on its tunnel job's next pass (is it running?)",
                                           config_.bridge.gateway, want)));
        } else if (mtu < uplinkMtu) {
            ++failed;
            out.push_back(fail("peers",
                               fmt::format("peer {} ({}): the path's MTU is {}, {} bytes below the uplink's {}{}: pod "
                                           "packets over {} bytes to it are lost",
                                           name, p.tunnelAddress(), mtu, uplinkMtu - mtu, uplinkMtu,
                                           config_.uplink.mtuConfigured ? " (uplink.mtu)" : "", mtu - overhead),
                               fmt::format("set uplink.mtu: {} on every node{}, or raise the MTU of the link on the way "
                                           "(ip route get {} shows it)",
                                           mtu,
                                           config_.mode == agent::Config::Mode::Standalone
                                               ? " or leave uplink.mtu and gateway.mtu unset (gw0 and new pods then "
                                                 "follow the narrowest path; docs/multi-host.md)"
                                               : "",
                                           p.tunnelAddress())));
        }
    }
    if (failed == 0)
        out.push_back(ok("peers", fmt::format("all {} peers (from {}) have the OVS route the kernel's route asks for and "
                                              "a tunnel neighbour with the kernel's MAC for its next hop",
                                              peers->size(), origin)));
}

void Doctor::checkRefusedPeers(std::vector<DoctorCheck>& out) {
    if (agentStatus_.is_null() || !agentStatus_.contains("rejectedPeers")) return;
    for (const auto& r : agentStatus_["rejectedPeers"]) {
        out.push_back(fail("peers-refused", fmt::format("peer {} is not programmed: {}", r.value("name", "?"), r.value("reason", "")),
                           "fix or delete that Node (or its peers file entry): node addresses must be unique, pod CIDRs "
                           "must not overlap each other, this node's, the Service CIDRs or a node address, and be no "
                           "wider than /12 (/36 for IPv6); of two Nodes in conflict the newer one is refused"));
    }
}

}  // namespace kovs::ctl
