#pragma once
// Where the peer set goes: from the peer source (file or Kubernetes API),
// through PeerFilter (peers that would capture traffic not theirs are
// refused), to every job that acts per peer: the tunnel job (ovs/route and
// tnl/neigh per node IP), and in standalone mode the flow table (pod CIDR ->
// tunnel) and the gateway's routes (pod CIDR dev gw0). Its status is the
// "peers" and "rejectedPeers" sections of `kovsctl status`.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/Config.hpp"
#include "base/EventLoop.hpp"
#include "base/Job.hpp"
#include "flows/FlowTable.hpp"
#include "gateway/GatewayGuard.hpp"
#include "kube/KubeConfig.hpp"
#include "peers/PeerFilter.hpp"
#include "peers/PeerSource.hpp"
#include "tunnel/TunnelReconciler.hpp"

namespace kovs::agent {

class PeerFanout : public Job {
public:
    using Subscriber = std::function<void(const peers::PeerSet& accepted)>;

    // `tunnel` may be null (uplink.mode none: no tunnel job); it is asked for
    // each peer's route/neighbour state in status().
    PeerFanout(peers::PeerFilterOptions filter, bool sourceConfigured, const tunnel::TunnelReconciler* tunnel);

    void subscribe(Subscriber s) { subscribers_.push_back(std::move(s)); }
    // The PeerSource callback.
    void onPeers(const peers::PeerSet& all, const std::vector<peers::RejectedPeer>& unreadable);
    // Its samples join /metrics (the Kubernetes source's list/watch counters).
    void setSource(const peers::PeerSource* source) { source_ = source; }

    bool known() const { return known_; }
    const peers::PeerSet& accepted() const { return accepted_; }

    std::string name() const override { return "peers"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;
    std::string notReady() const override;

private:
    peers::PeerFilterOptions filter_;
    bool sourceConfigured_;
    const tunnel::TunnelReconciler* tunnel_;
    const peers::PeerSource* source_ = nullptr;
    std::vector<Subscriber> subscribers_;
    peers::PeerSet accepted_;
    std::vector<peers::RejectedPeer> rejected_;
    bool known_ = false;
};

// The peers as the flow table takes them: every family (the table leaves out
// pod CIDRs of a family this node has none of).
std::vector<flows::FlowPeer> flowPeers(const peers::PeerSet& peers);
// What the egress job must not masquerade: pod -> peer pod and pod -> peer node.
struct PeerNetworks {
    std::vector<IpPrefix> podCidrs;
    std::vector<IpPrefix> nodes;
};
PeerNetworks peerNetworks(const peers::PeerSet& peers);

// The Kubernetes API's credentials (peers.kubeconfig, else in-cluster).
kube::KubeCredentials kubeCredentials(const Config& config);

// The peer source that peers.source names (a file or the Kubernetes API);
// null for none.
std::unique_ptr<peers::PeerSource> makePeerSource(EventLoop& loop, const Config& config);

}  // namespace kovs::agent
