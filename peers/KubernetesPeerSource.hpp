#pragma once
// Peers from the Kubernetes API: the Nodes, through kube::Informer (list,
// then watch from the list's resourceVersion with bookmarks; 410 Gone ->
// relist, one backoff for every failure; kube/ListWatch.hpp). A Node that does
// not decode is reported as unreadable, never the end of the list or the
// watch. Our own Node is in the set too: the peer filter takes this node's
// addresses from it (and leaves it out of the peers).
#include <string>

#include "base/EventLoop.hpp"
#include "kube/Informer.hpp"
#include "kube/KubeConfig.hpp"
#include "peers/PeerSource.hpp"

namespace kovs::peers {

class KubernetesPeerSource : public PeerSource {
public:
    // `tuning`: backoff, watch timeout and size limits (kube::ListWatchOptions);
    // the resource, path and fields are the Nodes' and set here.
    KubernetesPeerSource(EventLoop& loop, kube::KubeCredentials creds, kube::ListWatchOptions tuning = {});

    void start(Callback onPeers) override;
    void stop() override { nodes_.stop(); }
    void metrics(MetricsText& m) const override { nodes_.metrics(m); }

    // Failed lists/watches and lists so far (thread-safe); for status and tests.
    size_t failures() const { return nodes_.listWatch().failures(); }
    size_t lists() const { return nodes_.listWatch().lists(); }

private:
    kube::Informer<Peer> nodes_;
};

}  // namespace kovs::peers
