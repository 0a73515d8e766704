#pragma once
// One bridge's OpenFlow table through ovs-ofctl on the bridge's management
// socket (<rundir>/<bridge>.mgmt): the whole table replaced in one bundle
// (OpenFlow 1.4 bundles are atomic: the old table stays until the new one is
// complete, and flows that did not change are not touched), and read back.
// ovs-ofctl is an argv vector, never a shell; the flow text is its stdin.
//
// Both run as a ChildProcess on the agent's loop, one at a time, killed at a
// deadline: a slow or hung vswitchd delays the flow job, never the loop. An
// ovs-ofctl that cannot be started is reported to the callback like one that
// failed.
//
// A change is usually a few flow mods (a pod, a label, a policy), and
// starting ovs-ofctl is most of its cost (15-20 ms of exec on a small node;
// the bundle itself takes 1-3 ms). So once the bridge has taken a table, one
// `ovs-ofctl bundle` is kept started and waiting on its stdin (it reads its
// input before it connects, so it holds no connection while it waits), and
// the next modifyFlows hands it the mods. One that died meanwhile is replaced
// by a fresh start, as before. An agent killed outright leaves it to read
// EOF: it then commits an empty bundle, which changes nothing.
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "base/EventLoop.hpp"
#include "base/Process.hpp"
#include "flows/Flow.hpp"
#include "flows/FlowDump.hpp"

namespace kovs::flows {

// ovs-ofctl's target for `bridge`'s management socket: "unix:<rundir>/<bridge>.mgmt".
std::string managementTarget(const std::string& rundir, const std::string& bridge);

// What turns the table `installed` into `desired` (both as FlowTable renders
// them) as `ovs-ofctl bundle` input: "flow delete_strict"
// for each flow whose match and priority are gone, "flow add" for each new or
// changed one (an add replaces the flow of the same match and priority).
// nullopt when nothing is installed. Even a table that is mostly new is
// cheaper this way: replace-flows computes the same difference, after
// dumping the whole table first, and cannot use the waiting ovs-ofctl.
std::optional<std::string> flowModsBetween(const std::vector<Flow>& installed, const std::vector<Flow>& desired);

class OpenFlowBridge {
public:
    // "" on success, else ovs-ofctl's failure ("replace-flows on br-int: ...").
    using Done = std::function<void(const std::string& error)>;
    using Dumped = std::function<void(std::optional<FlowDump> dump, const std::string& error)>;

    // ovs-ofctl is killed when it runs longer than `timeout`.
    OpenFlowBridge(EventLoop& loop, std::string bridge, const std::string& rundir, std::chrono::milliseconds timeout);
    ~OpenFlowBridge();
    OpenFlowBridge(const OpenFlowBridge&) = delete;
    OpenFlowBridge& operator=(const OpenFlowBridge&) = delete;

    // One call at a time (busy() says whether one runs); the callback runs on the loop.
    void replaceFlows(const std::string& flows, Done done);
    // `ovs-ofctl bundle`: the flow mods of flowModsBetween, in one atomic
    // bundle, without reading the table first (replace-flows dumps it whole).
    void modifyFlows(const std::string& mods, Done done);
    void dumpFlows(Dumped done);
    bool busy() const { return child_.running() || spawnFailed_ != 0; }

    const std::string& bridge() const { return bridge_; }

private:
    using Finished = std::function<void(const ProcessResult&, const std::string& error)>;
    void run(std::vector<std::string> argv, std::optional<std::string> stdinData, Finished done);
    std::vector<std::string> bundleArgv() const;  // `ovs-ofctl bundle TARGET -`: mods on stdin
    // Starts the waiting `ovs-ofctl bundle` when none waits; one that cannot
    // start is no error here (modifyFlows then starts its own).
    void warmUp();

    EventLoop& loop_;
    std::string bridge_;
    std::string target_;
    std::chrono::milliseconds timeout_;
    ChildProcess child_;
    ChildProcess warm_;  // `ovs-ofctl bundle` waiting for its input
    EventLoop::TimerId spawnFailed_ = 0;  // a call that could not start, until its failure is reported
};

}  // namespace kovs::flows
