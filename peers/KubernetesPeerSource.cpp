#include "peers/KubernetesPeerSource.hpp"

#include "peers/KubeNode.hpp"

namespace kovs::peers {
namespace {

kube::ListWatchOptions nodeListWatch(kube::ListWatchOptions lw) {
    lw.resource = "nodes";
    lw.path = "/api/v1/nodes";
    lw.fields = nodeFields();
    return lw;
}

}  // namespace

KubernetesPeerSource::KubernetesPeerSource(EventLoop& loop, kube::KubeCredentials creds,
                                           kube::ListWatchOptions tuning)
    : nodes_(loop, std::move(creds), nodeListWatch(std::move(tuning)), peerFromNode) {}

void KubernetesPeerSource::start(Callback onPeers) {
    nodes_.start([onPeers = std::move(onPeers)](const kube::Snapshot<Peer>& s) {
        std::vector<RejectedPeer> unreadable;
        for (const auto& [name, why] : s.rejected) unreadable.push_back({name, why, Refusal::Unreadable});
        onPeers(PeerSet(s.items.begin(), s.items.end()), unreadable);
    });
}

}  // namespace kovs::peers
