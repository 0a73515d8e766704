#pragma once
// The few OVSDB operations the uplink migration needs on br-phy, spoken over
// OVSDB (no ovs-vsctl subprocess): add/remove the uplink port, pin the
// bridge's MAC (other_config:hwaddr), and read what the running vswitchd can
// do. Writes wait, as ovs-vsctl does, until ovs-vswitchd has applied them
// (next_cfg/cur_cfg), because the migration's next step is a kernel change
// that needs the device state they produce.
#include <chrono>
#include <string>
#include <vector>

#include "base/EventLoop.hpp"
#include "ovs/OvsdbClient.hpp"

namespace kovs::tunnel {

class UplinkOvsdb {
public:
    // Throws kovs::Error when ovsdb-server does not answer within `timeout`.
    explicit UplinkOvsdb(const std::string& remote, std::chrono::milliseconds timeout = std::chrono::seconds(10));

    std::vector<std::string> ifaceTypes();
    bool dpdkInitialized();
    // The bridge holding `port`; empty when no bridge does.
    std::string bridgeOf(const std::string& port);
    // type: "" or "system" for a plain port.
    void addPort(const std::string& bridge, const std::string& port, const std::string& type);
    // Removes the port from the bridge if it is there (OVSDB drops the unreferenced rows).
    void removePort(const std::string& bridge, const std::string& port);
    void setHwaddr(const std::string& bridge, const std::string& mac);
    void clearHwaddr(const std::string& bridge);

private:
    ovsdb::Json openVswitchRow(const std::vector<std::string>& columns);
    // Commits `txn` with a next_cfg bump and waits until vswitchd reports it applied.
    std::vector<ovsdb::Json> commitAndWait(ovsdb::Transaction& txn);

    std::chrono::milliseconds timeout_;
    EventLoop loop_;
    OvsdbClient db_;
};

}  // namespace kovs::tunnel
