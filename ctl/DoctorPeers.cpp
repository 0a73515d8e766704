#include "ctl/Doctor.hpp"

#include <fmt/format.h>

#include "base/Error.hpp"

#include "ovs/UnixctlClient.hpp"
#include "peers/PeerFile.hpp"
#include "tunnel/NeighbourTable.hpp"
#include "tunnel/OvsTunnelState.hpp"
#include "tunnel/TunnelPlanner.hpp"

namespace kovs::ctl {

// The peers this node's jobs work from: the agent's accepted set, or when it
// does not answer (stopped, hung, crash-looping) the peer file it reads.
std::optional<peers::PeerSet> Doctor::knownPeers(std::string& origin) const {
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
    if (config_.peers.source != agent::Config::PeerSourceKind::File) return std::nullopt;
    origin = config_.peers.file + " (the agent did not answer)";
    peers = peers::readPeerFile(config_.peers.file);
    peers.erase(config_.node.name);
    return peers;
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
        out.push_back(skipped("peers", "the agent did not answer and peers come from the Kubernetes API: peer list unknown"));
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
    try {
        observed.kernelMacs = tunnel::KernelNeighbourTable().resolved(bridge);
    } catch (const std::exception&) {
        // No bridge, no MACs: every peer then shows up without a neighbour.
    }
    auto gaps = tunnel::gapsOf(desired, tunnel::planTunnel(desired, observed, {}));
    auto join = [](const std::vector<std::string>& v, const char* sep) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
        return s;
    };
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
    if (failed == 0)
        out.push_back(ok("peers", fmt::format("all {} peers (from {}) have an OVS route and a tunnel neighbour with "
                                              "the kernel's MAC",
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
