#pragma once
// `kovs-agent --ovs-daemons`: the DaemonSet's ovs container. It runs
// ovsdb-server and ovs-vswitchd (OvsSupervisor, restarting a daemon that
// dies) and nothing else, so that the agent container can exit, crash, be
// killed or restarted while the datapath, and the node IP on br-phy that only
// ovs-vswitchd forwards for, carries on (docs/architecture.md, "Restarts,
// rollouts and reboots").
//
// When it is stopped (SIGTERM; kubelet sends it only when the pod ends,
// because this container has no liveness or startup probe) it first gives
// the node's addresses back to eth0, the uplink's cleanup that
// `kovs-agent --cleanup` also runs, and only then stops both daemons: the
// node stays on the network while kubelet fetches its next kovs pod from the
// API server. The bridges and ports stay in the database, so the next pod's
// daemons bring every pod port back, and its agent moves the uplink again.
#include <memory>

#include "agent/Config.hpp"
#include "base/EventLoop.hpp"
#include "daemons/OvsSupervisor.hpp"

namespace kovs::agent {

class OvsDaemons {
public:
    OvsDaemons(EventLoop& loop, Config config);
    OvsDaemons(const OvsDaemons&) = delete;
    OvsDaemons& operator=(const OvsDaemons&) = delete;

    // Starts (or adopts) both daemons. Throws kovs::Error naming the step.
    void start();
    // Uplink back to eth0, then both daemons stopped. Never throws: a failed
    // hand-back is logged, and the daemons are stopped all the same (the pod
    // is going away; kubelet's SIGKILL would stop them anyway).
    void stop();

private:
    void releaseUplink();

    EventLoop& loop_;
    Config config_;
    std::unique_ptr<daemons::OvsSupervisor> supervisor_;
};

}  // namespace kovs::agent
