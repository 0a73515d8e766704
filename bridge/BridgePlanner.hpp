#pragma once
// The bridge part of kovs's desired state, and the OVSDB transaction that
// takes a replica of the Open_vSwitch database there. Pure: no I/O, so every
// case (missing bridge, drifted option, foreign row) is unit-testable.
//
// Ownership: every Bridge/Port/Interface kovs creates carries
// external_ids:kovs-owner=<owner>. Rows without it are never updated or
// deleted, with one exception: a port in a bridge kovs owns, named as a port
// kovs wants there, is adopted (an older kovs made the uplink port without
// the mark, and a reboot keeps the database). The one write that touches a
// foreign row is adding kovs's own port to a foreign bridge's "ports"
// (companion mode: br-int belongs to another CNI). A port kovs owns that is no
// longer wanted (the uplink changed; a tunnel port an older kovs added to the
// other CNI's br-int) is removed, from whichever bridge holds it.
//
// Companion mode wants nothing of kovs on the integration bridge by default:
// no gateway (the other CNI's is guarded, never created: kovs starting first
// must not make it), no tunnel (the other CNI tunnels; a second VXLAN port
// would claim UDP 4789 next to its own), and the bridge itself is never
// created (ovn-controller and antrea-agent make their own br-int).
//
// The gateway port's MTU is set the OVS way, as mtu_request on its Interface
// row: without it, ovs-vswitchd keeps an internal port at the smallest MTU of
// the bridge's other ports (the pods'), and a guard that sets the MTU over
// netlink fights it (a repair every ~1.5 ms was measured).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ovs/OvsdbReplica.hpp"
#include "ovs/OvsdbTransaction.hpp"

namespace kovs::bridge {

// The uplink job's OVS side (uplink/UplinkPlanner: ovsSide): its port on the
// physical bridge, and the MAC that bridge must wear, eth0's.
struct BridgeUplinkPort {
    std::string port;    // kovs-up1 (shim), or the uplink interface itself (direct)
    std::string type;    // Interface type: "" for a system port, "afxdp", "dpdk", ...
    std::string hwaddr;  // other_config:hwaddr of the physical bridge
};

struct BridgeOptions {
    std::string integrationBridge = "br-int";
    std::string physBridge = "br-phy";  // empty: no physical bridge
    std::string gatewayPort = "gw0";    // empty: none (companion mode: the other CNI's, never created)
    std::optional<int> gatewayMtu;      // mtu_request of the gateway's Interface row
    std::string tunnelPort = "tun0";    // empty: none (companion mode unless asked)
    std::string tunnelType = "vxlan";
    int tunnelDstPort = 4789;
    std::string datapathType = "netdev";
    std::optional<std::string> failMode;  // br-int only ("secure" in standalone pod-network mode)
    std::string ownerKey = "kovs-owner";
    std::string owner = "kovs-agent";
    std::optional<BridgeUplinkPort> uplink;  // needs physBridge
    // false: the integration bridge is another CNI's to create; a missing one
    // is waited for (reported in BridgePlan::foreign), never made.
    bool createIntegrationBridge = true;
};

struct DesiredInterface {
    std::string name;
    std::string type;
    std::map<std::string, std::string> options;
    std::optional<int> mtuRequest;  // none: the column is left as it is
};

struct DesiredBridge {
    std::string name;
    bool create = true;  // false: only ever added to, once someone else made it
    std::optional<std::string> failMode;
    std::vector<DesiredInterface> ports;  // the bridge's own local port first
    // Keys of other_config kovs sets; other keys are left as they are.
    std::map<std::string, std::string> otherConfig;
};

struct BridgePlan {
    ovsdb::Transaction txn;
    std::vector<std::string> changes;   // "add port gw0 to br-int", for logs
    std::vector<std::string> foreign;   // rows left alone because kovs does not own them
};

class BridgePlanner {
public:
    explicit BridgePlanner(BridgeOptions opts);

    const BridgeOptions& options() const { return opts_; }
    const std::vector<DesiredBridge>& desired() const { return desired_; }
    // Operations that make the replica match the desired state; empty txn when it does.
    BridgePlan plan(const ovs::OvsdbReplica& db) const;
    // Operations that remove every row kovs owns (and only those).
    BridgePlan planCleanup(const ovs::OvsdbReplica& db) const;

    bool owned(const ovsdb::Json& row) const;

private:
    struct Names;
    void planBridge(const ovs::OvsdbReplica& db, const DesiredBridge& br, const std::string& root, BridgePlan& out,
                    Names& names) const;
    ovsdb::Json ownerMap() const;

    BridgeOptions opts_;
    std::vector<DesiredBridge> desired_;
};

}  // namespace kovs::bridge
