#pragma once
// kovs-agent --cleanup: removes what kovs created on the node (the networkd
// drop-ins, the egress nftables table, the owned OVS rows) and gives the
// uplink its original addressing back. With the OVSDB down (the DaemonSet
// deleted: the uninstall, kind/uninstall.yaml) the rows stay, and in
// standalone mode the bridges' leftover tap devices are removed instead.
#include "agent/Config.hpp"
#include "base/EventLoop.hpp"

namespace kovs::agent {

void cleanupNode(EventLoop& loop, const Config& config);

}  // namespace kovs::agent
