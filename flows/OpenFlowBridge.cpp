#include "flows/OpenFlowBridge.hpp"

#include "base/Error.hpp"

#include <set>

namespace kovs::flows {

std::string managementTarget(const std::string& rundir, const std::string& bridge) { return "unix:" + rundir + "/" + bridge + ".mgmt"; }

std::optional<std::string> flowModsBetween(const std::vector<Flow>& installed, const std::vector<Flow>& desired) {
    if (installed.empty()) return std::nullopt;
    std::set<std::string> afterKeys;
    for (const auto& f : desired) afterKeys.insert(f.strictKey());
    const std::set<Flow> before(installed.begin(), installed.end());
    std::string mods;
    for (const auto& f : installed) {
        if (!afterKeys.count(f.strictKey())) mods += "flow delete_strict " + f.strictKey() + "\n";
    }
    for (const auto& f : desired) {
        if (!before.count(f)) mods += "flow add " + f.text() + "\n";
    }
    return mods;
}

OpenFlowBridge::OpenFlowBridge(EventLoop& loop, std::string bridge, const std::string& rundir, std::chrono::milliseconds timeout)
    : loop_(loop), bridge_(std::move(bridge)), target_(managementTarget(rundir, bridge_)), timeout_(timeout) {}

OpenFlowBridge::~OpenFlowBridge() {
    if (spawnFailed_) loop_.cancel(spawnFailed_);
}

void OpenFlowBridge::run(std::vector<std::string> argv, std::optional<std::string> stdinData, Finished done) {
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
            if (error.empty()) warmUp();
            done(error.empty() ? "" : "replace-flows on " + bridge_ + ": " + error);
        });
}

std::vector<std::string> OpenFlowBridge::bundleArgv() const { return {"ovs-ofctl", "bundle", target_, "-"}; }

void OpenFlowBridge::modifyFlows(const std::string& mods, Done done) {
    auto argv = bundleArgv();
    Finished finished = [this, done = std::move(done)](const ProcessResult&, const std::string& error) {
        warmUp();
        done(error.empty() ? "" : "bundle on " + bridge_ + ": " + error);
    };
    if (busy() || !warm_.running()) return run(std::move(argv), mods, std::move(finished));
    child_ = std::move(warm_);
    child_.supplyInput(mods, [argv = std::move(argv), finished = std::move(finished)](ProcessResult r) {
        finished(r, r.ok() ? std::string() : describeFailure(argv, r));
    });
}

void OpenFlowBridge::warmUp() {
    if (warm_.running()) return;
    ProcessOptions o;
    o.inputLater = true;
    o.timeout = timeout_;
    try {
        warm_ = ChildProcess(loop_, bundleArgv(), o, [](ProcessResult) {});
    } catch (const std::exception&) {
        warm_ = ChildProcess();
    }
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
