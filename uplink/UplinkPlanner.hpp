#pragma once
// The uplink job's pure half: from the options and a snapshot of the node
// (UplinkObserved) to the desired state (UplinkDesired) and to the steps that
// get there (UplinkPlan), each with its undo. No I/O: every case (a fresh
// node, a rebooted one, an agent killed midway, a node an older kovs
// migrated) is a unit test.
//
// The order of a migration keeps the node reachable at every point:
//  1. the shim's veth and its redirect towards eth0 (nothing flows yet);
//  2. wait until ovs-vswitchd has attached the uplink port and br-phy wears
//     eth0's MAC (the bridge job writes both into OVSDB): addresses on a
//     bridge that cannot forward, or that answers ARP with another MAC,
//     would cut the node off or teach peers a wrong binding;
//  3. addresses onto br-phy before they leave eth0, so the node always holds
//     them; each route leaves eth0 just before it is added to br-phy (the
//     kernel refuses a second route with the same destination and metric);
//  4. eth0's own ingress is redirected into the shim, and from then on every
//     frame for the node enters OVS; only then do the addresses leave eth0,
//     which no longer sees a frame (before, a reply reaching eth0's stack
//     without an address there was dropped: measured, one ping lost).
// eth0 keeps its MAC throughout (br-phy takes the same one): with no Linux
// bridge in the shim there is nothing that would keep frames for eth0's MAC
// to itself, and so no new MAC that peers could learn for the node's IP.
#include <optional>
#include <string>
#include <vector>

#include "base/RtnetlinkClient.hpp"
#include "uplink/UplinkOptions.hpp"
#include "uplink/UplinkRecord.hpp"
#include "uplink/UplinkStep.hpp"

namespace kovs::uplink {

// What OVSDB (the agent's replica) says about the uplink's OVS side.
struct UplinkOvsView {
    std::string portBridge;               // the bridge whose ports include the uplink port; "" none
    int64_t ofport = 0;                   // the uplink Interface's ofport; <= 0: not attached
    std::string interfaceError;           // the Interface's error column
    std::string bridgeHwaddr;             // br-phy's other_config:hwaddr
    std::vector<std::string> ifaceTypes;  // Open_vSwitch iface_types
    bool dpdkInitialized = false;
    bool known = false;                   // there was a replica with an Open_vSwitch row
};

struct UplinkObserved {
    std::optional<LinkInfo> device;         // eth0
    std::optional<LinkInfo> bridge;         // br-phy's tap
    std::optional<LinkInfo> shimBridgeEnd;  // kovs-up0
    std::optional<LinkInfo> shimOvsEnd;     // kovs-up1
    std::optional<LinkInfo> legacyBridge;   // kovs-shim (kLegacyShimBridge)
    std::vector<AddressInfo> deviceAddresses, bridgeAddresses;  // all of them
    std::vector<RouteInfo> deviceRoutes, bridgeRoutes;          // main table, through the link
    std::optional<int> deviceRedirect;      // ifindex eth0's ingress is redirected to
    std::optional<int> shimRedirect;        // ifindex kovs-up0's ingress is redirected to
    bool bridgeTxChecksum = false;
    bool shimTxChecksum = false;
    std::optional<UplinkRecord> record;
    UplinkOvsView ovs;
};

struct UplinkDesired {
    std::string mac;                     // br-phy's: the node's IP<->MAC binding
    unsigned mtu = 0;                    // eth0's, for the shim veth
    std::vector<AddressInfo> addresses;  // the node's underlay identity, in eth0's order
    std::vector<RouteInfo> routes;
    std::string source;                  // where they were read: "eth0", "the record", "br-phy"
    UplinkRecord record;                 // what the record must say
};

// The OVS side the bridge job makes part of br-phy's desired state.
struct UplinkOvsSide {
    std::string port;    // kovs-up1 (shim) or eth0 (direct)
    std::string type;    // the Interface type: "" for a system port
    std::string hwaddr;  // br-phy's other_config:hwaddr
};

// The addresses that carry the node's identity (link-local ones belong to
// the link) and the routes the kernel does not recreate along with them (a
// multipath route stays where it is: it cannot be moved by next hop).
std::vector<AddressInfo> movableAddresses(const std::vector<AddressInfo>& all);
std::vector<RouteInfo> movableRoutes(const std::vector<RouteInfo>& all);

// The MAC older kovs gave eth0 in shim mode (0.1, a Linux bridge shim):
// locally administered, unicast, never equal to the original.
std::string legacyShimMac(const std::string& originalMac);
// The MAC br-phy must wear: eth0's, unless eth0 still wears the one an older
// kovs gave it, which shows as legacyShimMac() of br-phy's MAC in OVSDB or in
// the kernel. Needs no record: after a reboot eth0 has its own MAC back.
std::string pinnedMac(const UplinkObserved& o);

// Throws kovs::Error when the port type is unknown or this vswitchd cannot
// do it (iface_types, dpdk_initialized): before the bridge job adds the port.
void checkPortType(const UplinkOptions& opts, const UplinkOvsView& ovs);
UplinkOvsSide ovsSide(const UplinkOptions& opts, const UplinkObserved& o);

// Throws kovs::Error when there is no eth0 or no address to move anywhere.
UplinkDesired desire(const UplinkOptions& opts, const UplinkObserved& o);
UplinkPlan planMigration(const UplinkOptions& opts, const UplinkDesired& want, const UplinkObserved& o);
// Back to eth0's original addressing, without the shim; no OVSDB needed.
// Every step is attempted even when one fails (a rescue must go as far as it can).
UplinkPlan planCleanup(const UplinkOptions& opts, const UplinkObserved& o);
// The addresses --cleanup must find back on eth0.
std::vector<AddressInfo> addressesToRestore(const UplinkOptions& opts, const UplinkObserved& o);

}  // namespace kovs::uplink
