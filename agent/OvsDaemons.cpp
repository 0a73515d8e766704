#include "agent/OvsDaemons.hpp"

#include <spdlog/spdlog.h>

#include "agent/JobOptions.hpp"
#include "uplink/Uplink.hpp"

namespace kovs::agent {

OvsDaemons::OvsDaemons(EventLoop& loop, Config config) : loop_(loop), config_(std::move(config)) {}

void OvsDaemons::start() {
    auto opts = supervisorOptions(config_);
    // stop() ends them itself, after the uplink is back on eth0; if this
    // process dies instead, the container's end takes them along.
    opts.keepRunningOnExit = false;
    supervisor_ = std::make_unique<daemons::OvsSupervisor>(loop_, opts);
    supervisor_->start();
    spdlog::info("ovs daemons running: ovsdb-server pid {}, ovs-vswitchd pid {} (rundir {})",
                 supervisor_->pid(daemons::OvsSupervisor::Daemon::OvsdbServer), supervisor_->pid(daemons::OvsSupervisor::Daemon::Vswitchd),
                 config_.ovs.rundir);
}

// While both daemons still run: the uplink port comes out of br-phy through
// OVSDB, applied by vswitchd, so the next start finds no stale port.
void OvsDaemons::releaseUplink() {
    if (config_.uplink.mode == Config::UplinkMode::None) return;
    try {
        if (uplink::Uplink(uplinkOptions(config_)).cleanup())
            spdlog::info("uplink: node addresses handed back to {} before the datapath stops", config_.uplink.interface);
    } catch (const std::exception& e) {
        spdlog::error("uplink: could not hand the node addresses back to {}: {}", config_.uplink.interface, e.what());
    }
}

void OvsDaemons::stop() {
    if (!supervisor_) return;
    releaseUplink();
    supervisor_->stop();
    spdlog::info("ovs daemons stopped");
}

}  // namespace kovs::agent
