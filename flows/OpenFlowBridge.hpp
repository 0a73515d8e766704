#pragma once
// One bridge's OpenFlow table through ovs-ofctl on the bridge's management
// socket (<rundir>/<bridge>.mgmt): the whole table replaced in one bundle
// (OpenFlow 1.4 bundles are atomic: the old table stays until the new one is
// complete, and flows that did not change are not touched), and read back.
// ovs-ofctl is an argv vector, never a shell; the flow text is its stdin.
#include <string>

#include "flows/FlowDump.hpp"

namespace kovs {

class OpenFlowBridge {
public:
    OpenFlowBridge(std::string bridge, const std::string& rundir);

    // Throws kovs::Error with ovs-ofctl's message ("replace-flows on br-int: ...").
    void replaceFlows(const std::string& flows) const;
    FlowDump dumpFlows() const;

    const std::string& bridge() const { return bridge_; }

private:
    std::string bridge_;
    std::string target_;
};

}  // namespace kovs
