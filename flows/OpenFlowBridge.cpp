#include "flows/OpenFlowBridge.hpp"

#include "base/Error.hpp"
#include "base/Process.hpp"

namespace kovs {
namespace {

std::string failure(const ProcessResult& r) { return r.err.empty() ? "exit " + std::to_string(r.exitCode) : r.err; }

}  // namespace

OpenFlowBridge::OpenFlowBridge(std::string bridge, const std::string& rundir)
    : bridge_(std::move(bridge)), target_("unix:" + rundir + "/" + bridge_ + ".mgmt") {}

void OpenFlowBridge::replaceFlows(const std::string& flows) const {
    ProcessOptions o;
    o.stdinData = flows;
    auto r = runProcess({"ovs-ofctl", "--bundle", "replace-flows", target_, "-"}, o);
    if (!r.ok()) throw Error("replace-flows on " + bridge_ + ": " + failure(r));
}

FlowDump OpenFlowBridge::dumpFlows() const {
    auto r = runProcess({"ovs-ofctl", "dump-flows", target_});
    if (!r.ok()) throw Error("dump-flows on " + bridge_ + ": " + failure(r));
    return parseFlowDump(r.out);
}

}  // namespace kovs
