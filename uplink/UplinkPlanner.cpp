#include "uplink/UplinkPlanner.hpp"

#include <linux/if_addr.h>

#include <algorithm>

#include "base/Error.hpp"
#include "base/MacAddress.hpp"

namespace kovs::uplink {
namespace {

bool holds(const std::vector<AddressInfo>& have, const AddressInfo& a) {
    return std::any_of(have.begin(), have.end(), [&](const AddressInfo& h) { return h.sameAddress(a); });
}
bool holds(const std::vector<RouteInfo>& have, const RouteInfo& r) {
    return std::any_of(have.begin(), have.end(), [&](const RouteInfo& h) { return h.sameRoute(r); });
}

// The order that makes a link list the addresses as eth0 did: IPv4 as
// listed (the first of a subnet is its primary), IPv6 reversed (the kernel
// lists the newest first).
std::vector<AddressInfo> addOrder(const std::vector<AddressInfo>& listed) {
    std::vector<AddressInfo> v4, v6;
    for (const auto& a : listed) (a.family() == AF_INET6 ? v6 : v4).push_back(a);
    v4.insert(v4.end(), v6.rbegin(), v6.rend());
    return v4;
}

// On br-phy without duplicate address detection: eth0 still holds the
// address while it is added, and a tentative address cannot be used.
AddressInfo withoutDad(AddressInfo a) {
    if (a.family() == AF_INET6) a.flags |= IFA_F_NODAD;
    return a;
}

struct Identity {
    std::vector<AddressInfo> addresses;
    std::vector<RouteInfo> routes;
    std::string source;
};

bool recordHeld(const UplinkRecord& r, const UplinkOptions& opts, const UplinkObserved& o) {
    if (r.device != opts.device || r.addresses.empty()) return false;
    auto dev = movableAddresses(o.deviceAddresses), br = movableAddresses(o.bridgeAddresses);
    return std::all_of(r.addresses.begin(), r.addresses.end(), [&](const AddressInfo& a) { return holds(dev, a) || holds(br, a); });
}

// Whose addressing is the node's: the record while the interfaces still hold
// what it names; else eth0's (a fresh or rebooted node); else br-phy's (a
// migrated node whose record is gone), without the NODAD kovs added there.
Identity identity(const UplinkOptions& opts, const UplinkObserved& o) {
    if (o.record && recordHeld(*o.record, opts, o)) return {o.record->addresses, o.record->routes, "the record"};
    if (auto dev = movableAddresses(o.deviceAddresses); !dev.empty()) return {dev, movableRoutes(o.deviceRoutes), opts.device};
    auto br = movableAddresses(o.bridgeAddresses);
    for (auto& a : br) a.flags &= ~static_cast<uint32_t>(IFA_F_NODAD);
    return {br, movableRoutes(o.bridgeRoutes), opts.bridge};
}

struct Gate {
    std::string waiting, blocked;
};

// Whether OVS is ready to carry the node: the port attached, br-phy in eth0's MAC.
Gate ovsGate(const UplinkOptions& opts, const UplinkDesired& want, const UplinkObserved& o) {
    const auto& port = opts.port();
    const auto& ovs = o.ovs;
    if (!ovs.known) return {"OVSDB's view of the bridges", ""};
    if (!ovs.portBridge.empty() && ovs.portBridge != opts.bridge)
        return {"", "OVS port " + port + " is in bridge " + ovs.portBridge + ", not " + opts.bridge +
                        " (a port kovs does not own: remove it or choose another uplink)"};
    if (ovs.portBridge.empty()) return {"OVS to add port " + port + " to " + opts.bridge, ""};
    if (ovs.ofport <= 0)
        return {"ovs-vswitchd to attach " + port + (ovs.interfaceError.empty() ? "" : " (" + ovs.interfaceError + ")"), ""};
    if (!o.bridge) return {"ovs-vswitchd to create " + opts.bridge, ""};
    if (o.bridge->mac != want.mac) return {opts.bridge + " to take the MAC " + want.mac + " (it has " + o.bridge->mac + ")", ""};
    return {};
}

class Steps {
public:
    explicit Steps(std::vector<UplinkStep>& out) : out_(out) {}
    void operator()(UplinkAction a, std::optional<UplinkAction> undo = std::nullopt) {
        out_.push_back({std::move(a), std::move(undo)});
    }

private:
    std::vector<UplinkStep>& out_;
};

bool shimPaired(const UplinkObserved& o) {
    return o.shimBridgeEnd && o.shimOvsEnd && o.shimBridgeEnd->kind == "veth" && o.shimBridgeEnd->peer == o.shimOvsEnd->index;
}

// The shim's veth and its redirect towards eth0, from whatever is there.
void planShimDevices(const UplinkOptions& opts, const UplinkDesired& want, const UplinkObserved& o, Steps& add) {
    const auto &up0 = opts.shimBridgeEnd, &up1 = opts.shimOvsEnd;
    if (!shimPaired(o)) {
        if (o.shimBridgeEnd) add(step::DeleteLink{up0});
        if (o.shimOvsEnd) add(step::DeleteLink{up1});
        add(step::CreateVeth{up0, up1, want.mtu}, step::DeleteLink{up0});
        // Off the node's IP stack (base/LinkIsolation.hpp has why).
        add(step::Isolate{up0});
        add(step::Isolate{up1});
        // The point of the shim: a checksum the Docker host left to offload
        // (partial) is completed when eth0's frames are sent on kovs-up0.
        add(step::TxChecksumOff{up0});
        add(step::SetUp{up0});
        add(step::SetUp{up1});
        add(step::AddRedirect{up0, opts.device}, step::RemoveRedirect{up0});
        return;
    }
    for (const auto* end : {&*o.shimBridgeEnd, &*o.shimOvsEnd}) {
        // At the uplink's MTU: a jumbo underlay must not be capped at the veth default of 1500.
        if (end->mtu != want.mtu) add(step::SetMtu{end->name, want.mtu}, step::SetMtu{end->name, end->mtu});
        if (!end->noArp()) add(step::Isolate{end->name});
    }
    if (o.shimTxChecksum) add(step::TxChecksumOff{up0});
    for (const auto* end : {&*o.shimBridgeEnd, &*o.shimOvsEnd})
        if (!end->up()) add(step::SetUp{end->name});
    if (o.shimRedirect != o.device->index) add(step::AddRedirect{up0, opts.device}, step::RemoveRedirect{up0});
}

// The Linux bridge an older kovs put eth0 in, and the MAC it gave eth0.
void planLegacyTeardown(const UplinkOptions& opts, const std::string& mac, const UplinkObserved& o, Steps& add) {
    if (o.legacyBridge) {
        if (o.device && o.device->master == o.legacyBridge->index) add(step::SetNomaster{opts.device});
        add(step::DeleteLink{kLegacyShimBridge});
    }
    if (o.device && o.device->mac != mac) add(step::SetMac{opts.device, mac}, step::SetMac{opts.device, o.device->mac});
}

}  // namespace

std::vector<AddressInfo> movableAddresses(const std::vector<AddressInfo>& all) {
    std::vector<AddressInfo> out;
    for (const auto& a : all)
        if (a.scope != RT_SCOPE_LINK && a.scope != RT_SCOPE_HOST) out.push_back(a);
    return out;
}

std::vector<RouteInfo> movableRoutes(const std::vector<RouteInfo>& all) {
    std::vector<RouteInfo> out;
    for (const auto& r : all)
        if (r.protocol != RTPROT_KERNEL && r.type == RTN_UNICAST && r.table == RT_TABLE_MAIN && !r.multipath) out.push_back(r);
    return out;
}

std::string legacyShimMac(const std::string& originalMac) {
    auto m = MacAddress::parse(originalMac, "uplink: eth0's MAC");
    // Locally administered (0x02), unicast (~0x01), and bit 0x08 flipped so
    // it differed from an original that was already locally administered
    // (Docker's 02:42:...).
    m.bytes[0] = static_cast<uint8_t>(((m.bytes[0] | 0x02) & ~0x01u) ^ 0x08);
    return m.str();
}

std::string pinnedMac(const UplinkObserved& o) {
    if (!o.device) throw Error("uplink: no device to take the MAC from");
    const std::string& mine = o.device->mac;
    for (const std::string& c : {o.ovs.bridgeHwaddr, o.bridge ? o.bridge->mac : std::string()}) {
        auto original = MacAddress::tryParse(c);
        if (original && original->str() != mine && legacyShimMac(original->str()) == mine) return original->str();
    }
    return mine;
}

void checkPortType(const UplinkOptions& opts, const UplinkOvsView& ovs) {
    const auto& t = opts.portType;
    const auto& known = uplinkPortTypes();
    if (std::find(known.begin(), known.end(), t) == known.end()) {
        std::string all;
        for (const auto& k : known) all += (all.empty() ? "" : ", ") + k;
        throw Error("uplink port type '" + t + "': unknown (" + all + ")");
    }
    if (t == "system" || !ovs.known) return;
    if (t == "dpdk") {
        if (!ovs.dpdkInitialized) throw Error("uplink port type dpdk: ovs-vswitchd reports dpdk_initialized=false");
        return;
    }
    if (std::find(ovs.ifaceTypes.begin(), ovs.ifaceTypes.end(), t) == ovs.ifaceTypes.end()) {
        std::string all;
        for (const auto& x : ovs.ifaceTypes) all += (all.empty() ? "" : ",") + x;
        throw Error("uplink port type " + t + ": this ovs-vswitchd does not support it (iface_types " + all + ")");
    }
}

UplinkOvsSide ovsSide(const UplinkOptions& opts, const UplinkObserved& o) {
    checkPortType(opts, o.ovs);
    if (!o.device) throw Error("uplink " + opts.device + ": no such device");
    return {opts.port(), opts.portType == "system" ? "" : opts.portType, pinnedMac(o)};
}

UplinkDesired desire(const UplinkOptions& opts, const UplinkObserved& o) {
    if (!o.device) throw Error("uplink " + opts.device + ": no such device");
    auto id = identity(opts, o);
    if (id.addresses.empty())
        throw Error("uplink " + opts.device + ": no address to move to " + opts.bridge + " (neither holds one)");
    UplinkDesired want;
    want.mac = pinnedMac(o);
    want.mtu = o.device->mtu;
    want.addresses = id.addresses;
    want.routes = id.routes;
    want.source = id.source;
    want.record = {modeName(opts.mode), opts.device, want.mac, want.mtu, id.addresses, id.routes};
    return want;
}

UplinkPlan planMigration(const UplinkOptions& opts, const UplinkDesired& want, const UplinkObserved& o) {
    UplinkPlan plan;
    Steps add(plan.steps);
    const auto &dev = opts.device, &br = opts.bridge;
    const bool shim = opts.mode == UplinkMode::Shim;

    // Before the first change, so that a later start and --cleanup know
    // what eth0 had, also after a crash.
    if (!o.record || *o.record != want.record)
        add(step::WriteRecord{want.record},
            o.record ? UplinkAction(step::WriteRecord{*o.record}) : UplinkAction(step::RemoveRecord{}));
    if (!o.device->up()) add(step::SetUp{dev});
    if (shim) planShimDevices(opts, want, o, add);

    // Everything after this point depends on OVS and on what the steps above
    // made; it is planned from a fresh look once they are in place.
    bool prepared = std::all_of(plan.steps.begin(), plan.steps.end(),
                                [](const UplinkStep& s) { return std::holds_alternative<step::WriteRecord>(s.action); });
    auto gate = ovsGate(opts, want, o);
    if (!gate.blocked.empty()) {
        plan.blocked = gate.blocked;
        return plan;
    }
    if (!prepared || !gate.waiting.empty()) {
        plan.waitingFor = gate.waiting.empty() ? "the shim devices to be in place" : gate.waiting;
        return plan;
    }

    if (!shim) {
        if (o.deviceRedirect) add(step::RemoveRedirect{dev});
        if (o.shimBridgeEnd) add(step::DeleteLink{opts.shimBridgeEnd});
        if (o.shimOvsEnd) add(step::DeleteLink{opts.shimOvsEnd});
    }
    if (o.bridgeTxChecksum) add(step::TxChecksumOff{br});
    if (!o.bridge->up()) add(step::SetUp{br}, step::SetUp{br, false});

    // Onto br-phy before off eth0: the node holds its addresses throughout.
    auto onBridge = movableAddresses(o.bridgeAddresses), onDevice = movableAddresses(o.deviceAddresses);
    auto order = addOrder(want.addresses);
    for (const auto& a : order)
        if (!holds(onBridge, a)) add(step::AddAddress{br, withoutDad(a)}, step::DeleteAddress{br, a});
    for (const auto& r : want.routes) {
        if (holds(o.deviceRoutes, r)) add(step::DeleteRoute{dev, r}, step::AddRoute{dev, r});
        if (!holds(o.bridgeRoutes, r)) add(step::AddRoute{br, r}, step::DeleteRoute{br, r});
    }
    // eth0's own frames into the shim, and from here on into OVS, while eth0
    // still holds the addresses: once they are gone a frame that reached
    // eth0's stack would be dropped (rp_filter: the route back is br-phy's).
    if (shim && o.deviceRedirect != o.shimBridgeEnd->index)
        add(step::AddRedirect{dev, opts.shimBridgeEnd}, step::RemoveRedirect{dev});
    // Newest first, so that the undo puts them back in eth0's order, and a
    // secondary goes before its primary (which would take it along).
    for (auto it = order.rbegin(); it != order.rend(); ++it)
        if (holds(onDevice, *it)) add(step::DeleteAddress{dev, *it}, step::AddAddress{dev, *it});
    planLegacyTeardown(opts, want.mac, o, add);
    return plan;
}

std::vector<AddressInfo> addressesToRestore(const UplinkOptions& opts, const UplinkObserved& o) {
    return identity(opts, o).addresses;
}

UplinkPlan planCleanup(const UplinkOptions& opts, const UplinkObserved& o) {
    UplinkPlan plan;
    Steps add(plan.steps);
    const auto &dev = opts.device, &br = opts.bridge;
    auto id = identity(opts, o);

    // L2 first, so that eth0 receives its own frames again when its
    // addresses come back.
    if (o.deviceRedirect) add(step::RemoveRedirect{dev});
    if (o.device) {
        planLegacyTeardown(opts, pinnedMac(o), o, add);
        if (!o.device->up()) add(step::SetUp{dev});
        auto onDevice = movableAddresses(o.deviceAddresses), onBridge = movableAddresses(o.bridgeAddresses);
        for (const auto& a : addOrder(id.addresses))
            if (!holds(onDevice, a)) add(step::AddAddress{dev, a});
        for (const auto& r : id.routes)
            if (holds(o.bridgeRoutes, r)) add(step::DeleteRoute{br, r});
        for (const auto& a : id.addresses)
            if (holds(onBridge, a)) add(step::DeleteAddress{br, a});
        for (const auto& r : id.routes)
            if (!holds(o.deviceRoutes, r)) add(step::AddRoute{dev, r});
    }
    if (o.shimRedirect) add(step::RemoveRedirect{opts.shimBridgeEnd});
    if (o.shimBridgeEnd) add(step::DeleteLink{opts.shimBridgeEnd});
    if (o.shimOvsEnd) add(step::DeleteLink{opts.shimOvsEnd});
    return plan;
}

}  // namespace kovs::uplink
