#pragma once
// The bridge part of kovs's desired state, and the OVSDB transaction that
// takes a replica of the Open_vSwitch database there. Pure: no I/O, so every
// case (missing bridge, drifted option, foreign row) is unit-testable.
//
// Ownership: every Bridge/Port/Interface kovs creates carries
// external_ids:kovs-owner=<owner>. Rows without it are never updated or
// deleted. The one write that touches a foreign row is adding kovs's own port
// to a foreign bridge's "ports" (companion mode: br-int belongs to another CNI).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ovs/OvsdbReplica.hpp"
#include "ovs/OvsdbTransaction.hpp"

namespace kovs {

struct BridgeOptions {
    std::string integrationBridge = "br-int";
    std::string physBridge = "br-phy";  // empty: no physical bridge
    std::string gatewayPort = "gw0";    // any name: antrea-gw0 works too
    std::string tunnelPort = "tun0";
    std::string tunnelType = "vxlan";
    int tunnelDstPort = 4789;
    std::string datapathType = "netdev";
    std::optional<std::string> failMode;  // br-int only ("secure" in standalone pod-network mode)
    std::string ownerKey = "kovs-owner";
    std::string owner = "kovs-agent";
};

struct DesiredInterface {
    std::string name;
    std::string type;
    std::map<std::string, std::string> options;
};

struct DesiredBridge {
    std::string name;
    std::optional<std::string> failMode;
    std::vector<DesiredInterface> ports;  // the bridge's own local port first
};

struct BridgePlan {
    ovsdb::Transaction txn;
    std::vector<std::string> changes;   // "add port gw0 to br-int", for logs
    std::vector<std::string> foreign;   // rows left alone because kovs does not own them
};

class BridgePlanner {
public:
    explicit BridgePlanner(BridgeOptions opts);

    const std::vector<DesiredBridge>& desired() const { return desired_; }
    // Operations that make the replica match the desired state; empty txn when it does.
    BridgePlan plan(const OvsdbReplica& db) const;
    // Operations that remove every row kovs owns (and only those).
    BridgePlan planCleanup(const OvsdbReplica& db) const;

    bool owned(const ovsdb::Json& row) const;

private:
    struct Names;
    void planBridge(const OvsdbReplica& db, const DesiredBridge& br, const std::string& root, BridgePlan& out,
                    Names& names) const;
    ovsdb::Json ownerMap() const;

    BridgeOptions opts_;
    std::vector<DesiredBridge> desired_;
};

}  // namespace kovs
