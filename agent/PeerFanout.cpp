#include "agent/PeerFanout.hpp"

#include <spdlog/spdlog.h>

#include "peers/FilePeerSource.hpp"
#include "peers/KubernetesPeerSource.hpp"
#include "peers/kube/KubeConfig.hpp"

namespace kovs::agent {

PeerFanout::PeerFanout(peers::PeerFilterOptions filter, bool sourceConfigured, const tunnel::TunnelReconciler* tunnel)
    : filter_(std::move(filter)), sourceConfigured_(sourceConfigured), tunnel_(tunnel) {}

void PeerFanout::onPeers(const peers::PeerSet& all) {
    auto f = peers::filterPeers(all, filter_);
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
        peers.push_back({{"name", name}, {"nodeIP", p.nodeIP}, {"podCIDRs", p.podCIDRs},
                         {"route", tunnel_ && tunnel_->hasRoute(p.nodeIP)},
                         {"neighbour", tunnel_ && tunnel_->hasNeighbour(p.nodeIP)}});
    }
    out["peers"] = peers;
    auto rejected = nlohmann::json::array();
    for (const auto& r : rejected_) rejected.push_back({{"name", r.name}, {"reason", r.reason}});
    out["rejectedPeers"] = rejected;
}

void PeerFanout::metrics(MetricsText& m) const {
    m.gauge("kovs_peers", "Peer nodes programmed.", static_cast<double>(accepted_.size()));
    m.gauge("kovs_peers_rejected", "Peer nodes refused (their pod CIDR overlaps, is too wide or holds a node address).",
            static_cast<double>(rejected_.size()));
}

std::string PeerFanout::notReady() const {
    return sourceConfigured_ && !known_ ? "peer list not received yet" : "";
}

namespace {
bool ipv4(const std::string& addr) { return addr.find(':') == std::string::npos; }
}  // namespace

std::vector<flows::FlowRemoteSubnet> flowRemotes(const peers::PeerSet& peers) {
    std::vector<flows::FlowRemoteSubnet> out;
    for (const auto& [_, p] : peers) {
        if (!ipv4(p.nodeIP)) continue;
        for (const auto& cidr : p.podCIDRs) {
            if (ipv4(cidr)) out.push_back({cidr, p.nodeIP});
        }
    }
    return out;
}

std::vector<gateway::GatewayRoute> peerGatewayRoutes(const peers::PeerSet& peers) {
    std::vector<gateway::GatewayRoute> out;
    for (const auto& r : flowRemotes(peers)) out.push_back({IpPrefix::parse(r.cidr), std::nullopt});
    return out;
}

PeerNetworks peerNetworks(const peers::PeerSet& peers) {
    PeerNetworks out;
    for (const auto& [_, p] : peers) {
        out.nodes.push_back(IpPrefix::parse(p.nodeIP));
        for (const auto& c : p.podCIDRs) out.podCidrs.push_back(IpPrefix::parse(c));
    }
    return out;
}

std::unique_ptr<peers::PeerSource> makePeerSource(EventLoop& loop, const Config& config) {
    switch (config.peers.source) {
        case Config::PeerSourceKind::None:
            return nullptr;
        case Config::PeerSourceKind::File:
            return std::make_unique<peers::FilePeerSource>(loop, config.peers.file);
        case Config::PeerSourceKind::Kubernetes: {
            auto creds = config.peers.kubeconfig.empty() ? peers::inClusterCredentials()
                                                         : peers::kubeconfigCredentials(config.peers.kubeconfig);
            peers::KubernetesPeerSourceOptions o;
            o.nodeName = config.node.name;
            return std::make_unique<peers::KubernetesPeerSource>(loop, std::move(creds), o);
        }
    }
    return nullptr;
}

}  // namespace kovs::agent
