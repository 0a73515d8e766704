#include "peers/KubernetesPeerSource.hpp"

#include "peers/KubeNode.hpp"

namespace kovs::peers {
namespace {

kube::ListWatchOptions nodeListWatch(const KubernetesPeerSourceOptions& o) {
    kube::ListWatchOptions lw;
    lw.resource = "nodes";
    lw.path = "/api/v1/nodes";
    lw.fields = nodeFields();
    lw.backoffInitial = o.backoffInitial;
    lw.backoffMax = o.backoffMax;
    lw.watchTimeoutSeconds = o.watchTimeoutSeconds;
    lw.maxListBytes = o.maxListBytes;
    lw.maxEventBytes = o.maxEventBytes;
    return lw;
}

}  // namespace

KubernetesPeerSource::KubernetesPeerSource(EventLoop& loop, kube::KubeCredentials creds,
                                           KubernetesPeerSourceOptions opts)
    : nodes_(loop, std::move(creds), nodeListWatch(opts), peerFromNode) {}

void KubernetesPeerSource::start(Callback onPeers) {
    nodes_.start([onPeers = std::move(onPeers)](const kube::Snapshot<Peer>& s) {
        std::vector<RejectedPeer> unreadable;
        for (const auto& [name, why] : s.rejected) unreadable.push_back({name, why});
        onPeers(PeerSet(s.items.begin(), s.items.end()), unreadable);
    });
}

}  // namespace kovs::peers
