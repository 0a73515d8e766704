#include "agent/PeerFanout.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "peers/FilePeerSource.hpp"
#include "peers/KubernetesPeerSource.hpp"
#include "kube/KubeConfig.hpp"

namespace kovs::agent {

PeerFanout::PeerFanout(peers::PeerFilterOptions filter, bool sourceConfigured, const tunnel::TunnelReconciler* tunnel)
    : filter_(std::move(filter)), sourceConfigured_(sourceConfigured), tunnel_(tunnel) {}

void PeerFanout::onPeers(const peers::PeerSet& all, const std::vector<peers::RejectedPeer>& unreadable) {
    auto f = peers::filterPeers(all, filter_);
    for (const auto& u : unreadable) {
        if (u.name != filter_.self) f.rejected.push_back(u);
    }
    std::sort(f.rejected.begin(), f.rejected.end(),
              [](const peers::RejectedPeer& a, const peers::RejectedPeer& b) { return a.name < b.name; });
    if (f.rejected != rejected_) {
        for (const auto& r : f.rejected) spdlog::error("peers: {} refused: {}", r.name, r.reason);
        if (f.rejected.empty() && !rejected_.empty()) spdlog::info("peers: no peer refused any more");
    }
    rejected_ = std::move(f.rejected);
    accepted_ = std::move(f.accepted);
    known_ = true;
    spdlog::info("peers: {} node(s){}", accepted_.size(),
                 rejected_.empty() ? "" : fmt::format(", {} refused", rejected_.size()));
    for (const auto& s : subscribers_) s(accepted_);
}

void PeerFanout::status(nlohmann::json& out) const {
    auto peers = nlohmann::json::array();
    for (const auto& [name, p] : accepted_) {
        auto nodeIPs = nlohmann::json::array();
        for (const auto& ip : p.nodeIPs) nodeIPs.push_back(ip.addressString());
        auto podCIDRs = nlohmann::json::array();
        for (const auto& c : p.podCIDRs) podCIDRs.push_back(c.str());
        nlohmann::json peer{{"name", name}, {"nodeIP", p.tunnelAddress()}, {"nodeIPs", nodeIPs}, {"podCIDRs", podCIDRs},
                            {"route", tunnel_ && tunnel_->hasRoute(p.tunnelAddress())},
                            {"neighbour", tunnel_ && tunnel_->hasNeighbour(p.tunnelAddress())}};
        if (tunnel_) {
            // How the kernel reaches it: "via" the gateway (absent when on-link),
            // the path's MTU, or why there is no path.
            auto path = tunnel_->pathOf(p.tunnelAddress());
            if (!path.gateway.empty()) peer["via"] = path.gateway;
            if (!path.device.empty()) peer["device"] = path.device;
            if (path.mtu) peer["pathMtu"] = path.mtu;
            if (!path.problem.empty()) peer["problem"] = path.problem;
        }
        peers.push_back(std::move(peer));
    }
    out["peers"] = peers;
    auto rejected = nlohmann::json::array();
    for (const auto& r : rejected_)
        rejected.push_back({{"name", r.name}, {"reason", r.reason}, {"kind", peers::refusalLabel(r.refusal)}});
    out["rejectedPeers"] = rejected;
}

void PeerFanout::metrics(MetricsText& m) const {
    m.gauge("kovs_peers", "Peer nodes programmed.", static_cast<double>(accepted_.size()));
    for (const auto& [refusal, label] : peers::kRefusals) {
        auto n = std::count_if(rejected_.begin(), rejected_.end(),
                               [r = refusal](const peers::RejectedPeer& p) { return p.refusal == r; });
        m.gauge("kovs_peers_rejected",
                "Nodes refused as peers, by reason (unreadable, or a pod CIDR or node address that would take "
                "another's traffic).",
                static_cast<double>(n), {{"reason", label}});
    }
    if (source_) source_->metrics(m);
}

std::string PeerFanout::notReady() const {
    return sourceConfigured_ && !known_ ? "peer list not received yet" : "";
}

std::vector<flows::FlowPeer> flowPeers(const peers::PeerSet& peers) {
    std::vector<flows::FlowPeer> out;
    for (const auto& [_, p] : peers) out.push_back({p.tunnelIP(), p.podCIDRs, p.nodeIPs});
    return out;
}

PeerNetworks peerNetworks(const peers::PeerSet& peers) {
    PeerNetworks out;
    for (const auto& [_, p] : peers) {
        out.nodes.insert(out.nodes.end(), p.nodeIPs.begin(), p.nodeIPs.end());
        out.podCidrs.insert(out.podCidrs.end(), p.podCIDRs.begin(), p.podCIDRs.end());
    }
    return out;
}

kube::KubeCredentials kubeCredentials(const Config& config) {
    auto creds = config.peers.kubeconfig.empty() ? kube::inClusterCredentials() : kube::kubeconfigCredentials(config.peers.kubeconfig);
    creds.allowUnprotectedToken = config.peers.allowUnprotectedToken;
    return creds;
}

std::unique_ptr<peers::PeerSource> makePeerSource(EventLoop& loop, const Config& config) {
    switch (config.peers.source) {
        case Config::PeerSourceKind::None:
            return nullptr;
        case Config::PeerSourceKind::File:
            return std::make_unique<peers::FilePeerSource>(loop, config.peers.file);
        case Config::PeerSourceKind::Kubernetes:
            return std::make_unique<peers::KubernetesPeerSource>(loop, kubeCredentials(config));
    }
    return nullptr;
}

}  // namespace kovs::agent
