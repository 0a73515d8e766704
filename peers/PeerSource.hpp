#pragma once
#include <functional>

#include "peers/Peer.hpp"

namespace kovs::peers {

// Where the set of peer nodes comes from (the Kubernetes API, or a file).
// A source reports the whole set each time it changes, always on the thread
// of the EventLoop it was built with, and keeps the last good set when its
// input turns bad (it logs the error instead of reporting an empty set).
class PeerSource {
public:
    using Callback = std::function<void(const PeerSet&)>;

    virtual ~PeerSource() = default;
    virtual void start(Callback onPeers) = 0;
    // After stop() returns, the callback is never called again.
    virtual void stop() = 0;
};

}  // namespace kovs::peers
