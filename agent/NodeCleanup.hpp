#pragma once
// kovs-agent --cleanup: removes what kovs created on the node (the networkd
// drop-ins, the egress nftables table, the owned OVS rows) and gives the
// uplink its original addressing back. What it cannot reach (an OVSDB that
// is down) it leaves as it is and says so.
#include "agent/Config.hpp"
#include "base/EventLoop.hpp"

namespace kovs::agent {

void cleanupNode(EventLoop& loop, const Config& config);

}  // namespace kovs::agent
