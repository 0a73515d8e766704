#pragma once
// kovs-agent: owns one instance of each reconciler, wires them to the event
// loop, and answers --once and --cleanup. Each reconciler is level-triggered:
// events make it look sooner, the periodic resync makes sure it looks at all.
#include <memory>
#include <optional>

#include "agent/Config.hpp"
#include "agent/GatewayGuard.hpp"
#include "base/EventLoop.hpp"

namespace kovs {

class Agent {
public:
    Agent(EventLoop& loop, Config config);
    ~Agent();
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    // Builds every reconciler and schedules their first run.
    void start();
    // --once: runs each reconciler to completion; true when the node converged.
    bool runOnce();
    // --cleanup: removes what kovs created (owned OVS rows, drop-ins, uplink
    // migration) and restores the node's original addressing.
    void cleanup();

private:
    GatewayGuardOptions gatewayOptions() const;
    std::vector<std::string> dropinInterfaces() const;

    EventLoop& loop_;
    Config config_;
    std::optional<GatewayGuard> gateway_;
};

}  // namespace kovs
