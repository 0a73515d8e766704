#pragma once
// A short-lived OVSDB connection for one kovs-cni invocation: its own event
// loop, no monitor, transact only.
#include <chrono>
#include <memory>
#include <string>

#include "base/EventLoop.hpp"
#include "ovs/OvsdbClient.hpp"
#include "cni/CniError.hpp"
#include "cni/PodPorts.hpp"

namespace kovs::cni {

class OvsdbSession {
public:
    // Throws CniError(unreachableCode) when ovsdb-server does not answer in time.
    OvsdbSession(const std::string& remote, const std::string& bridge, std::chrono::milliseconds timeout,
                 int unreachableCode)
        : client_(loop_, options(remote, timeout)), ports_(client_, bridge) {
        if (!client_.waitReady(timeout)) {
            throw CniError(unreachableCode, "ovsdb " + remote + ": not reachable within " +
                                                std::to_string(timeout.count()) + " ms");
        }
    }
    PodPorts& ports() { return ports_; }

private:
    static ovs::OvsdbClientOptions options(const std::string& remote, std::chrono::milliseconds timeout) {
        ovs::OvsdbClientOptions o;
        o.remote = remote;
        o.monitorTables = {};
        o.requestTimeout = timeout;
        o.backoffMin = std::chrono::milliseconds(20);
        o.backoffMax = std::chrono::milliseconds(200);
        return o;
    }

    EventLoop loop_;
    ovs::OvsdbClient client_;
    PodPorts ports_;
};

}  // namespace kovs::cni
