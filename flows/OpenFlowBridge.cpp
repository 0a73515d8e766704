#include "flows/OpenFlowBridge.hpp"

#include "base/Error.hpp"

namespace kovs::flows {

std::string managementTarget(const std::string& rundir, const std::string& bridge) { return "unix:" + rundir + "/" + bridge + ".mgmt"; }

OpenFlowBridge::OpenFlowBridge(EventLoop& loop, std::string bridge, const std::string& rundir, std::chrono::milliseconds timeout)
    : loop_(loop), bridge_(std::move(bridge)), target_(managementTarget(rundir, bridge_)), timeout_(timeout) {}

OpenFlowBridge::~OpenFlowBridge() {
    if (spawnFailed_) loop_.cancel(spawnFailed_);
}

void OpenFlowBridge::run(std::vector<std::string> argv, std::optional<std::string> stdinData,
                         std::function<void(const ProcessResult&, const std::string&)> done) {
    if (busy()) throw Error("ovs-ofctl on " + bridge_ + ": another call is still running");
    ProcessOptions o;
    o.stdinData = std::move(stdinData);
    o.timeout = timeout_;
    try {
        child_ = ChildProcess(loop_, argv, o, [argv, done](ProcessResult r) {
            done(r, r.ok() ? std::string() : describeFailure(argv, r));
        });
    } catch (const std::exception& e) {
        // ovs-ofctl could not be started (not on PATH, EMFILE, EAGAIN): a
        // failed call like any other, reported from the loop as one that ran.
        spawnFailed_ = loop_.after(std::chrono::milliseconds(0), [this, done, why = std::string(e.what())] {
            spawnFailed_ = 0;
            done(ProcessResult{}, why);
        });
    }
}

void OpenFlowBridge::replaceFlows(const std::string& flows, Done done) {
    run({"ovs-ofctl", "--bundle", "replace-flows", target_, "-"}, flows,
        [this, done = std::move(done)](const ProcessResult&, const std::string& error) {
            done(error.empty() ? "" : "replace-flows on " + bridge_ + ": " + error);
        });
}

void OpenFlowBridge::dumpFlows(Dumped done) {
    run({"ovs-ofctl", "dump-flows", target_}, std::nullopt,
        [this, done = std::move(done)](const ProcessResult& r, const std::string& error) {
            if (!error.empty()) return done(std::nullopt, "dump-flows on " + bridge_ + ": " + error);
            try {
                done(parseFlowDump(r.out), "");
            } catch (const Error& e) {
                done(std::nullopt, "dump-flows on " + bridge_ + ": " + e.what());
            }
        });
}

}  // namespace kovs::flows
