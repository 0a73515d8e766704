#pragma once
#include <functional>
#include <vector>

#include "base/Metrics.hpp"
#include "peers/Peer.hpp"

namespace kovs::peers {

// Where the set of peer nodes comes from (the Kubernetes API, or a file).
// A source reports the whole set each time it changes, always on the thread
// of the EventLoop it was built with, with the nodes it could not read
// (`unreadable`: a Node object that does not decode, named with the reason;
// the others are used). When its input turns bad as a whole (a file that
// does not parse, an API server that does not answer) it keeps the last good
// set and logs the error instead of reporting an empty set.
class PeerSource {
public:
    using Callback = std::function<void(const PeerSet& peers, const std::vector<RejectedPeer>& unreadable)>;

    virtual ~PeerSource() = default;
    virtual void start(Callback onPeers) = 0;
    // After stop() returns, the callback is never called again.
    virtual void stop() = 0;
    // The source's own samples for /metrics (loop thread).
    virtual void metrics(MetricsText&) const {}
};

}  // namespace kovs::peers
