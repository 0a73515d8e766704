#include "uplink/UplinkKernel.hpp"

#include <algorithm>
#include <type_traits>

#include "base/Error.hpp"
#include "base/IngressRedirect.hpp"
#include "base/LinkIsolation.hpp"
#include "ovs/OvsdbTransaction.hpp"

namespace kovs::uplink {

UplinkOvsView ovsViewOf(const UplinkOptions& opts, const ovs::OvsdbReplica& db) {
    using ovsdb::Json;
    UplinkOvsView v;
    const auto& roots = db.table("Open_vSwitch");
    if (roots.empty()) return v;
    v.known = true;
    const auto& root = roots.begin()->second;
    for (const auto& t : ovsdb::setElements(root.value("iface_types", Json())))
        if (t.is_string()) v.ifaceTypes.push_back(t.get<std::string>());
    auto dpdk = root.value("dpdk_initialized", Json());
    v.dpdkInitialized = dpdk.is_boolean() && dpdk.get<bool>();

    if (auto iface = db.findByName("Interface", opts.port())) {
        auto ofport = ovsdb::setElements(iface->second.value("ofport", Json()));
        if (!ofport.empty() && ofport[0].is_number_integer()) v.ofport = ofport[0].get<int64_t>();
        auto error = ovsdb::setElements(iface->second.value("error", Json()));
        if (!error.empty() && error[0].is_string()) v.interfaceError = error[0].get<std::string>();
    }
    auto port = db.findByName("Port", opts.port());
    for (const auto& [uuid, bridge] : db.table("Bridge")) {
        auto name = ovsdb::stringOr(bridge, "name");
        if (name == opts.bridge) {
            auto other = ovsdb::mapValue(bridge.value("other_config", Json()));
            if (auto it = other.find("hwaddr"); it != other.end()) v.bridgeHwaddr = it->second;
        }
        if (!port) continue;
        auto ports = ovsdb::uuidSet(bridge.value("ports", Json()));
        if (std::find(ports.begin(), ports.end(), port->first) != ports.end()) v.portBridge = name;
    }
    return v;
}

UplinkKernel::UplinkKernel(UplinkOptions opts) : opts_(std::move(opts)) {}

UplinkObserved UplinkKernel::observe(const ovs::OvsdbReplica* replica) {
    UplinkObserved o;
    o.device = rtnl_.link(opts_.device);
    if (o.device) {
        o.deviceAddresses = rtnl_.addresses(opts_.device);
        o.deviceRoutes = rtnl_.routes(opts_.device);
        o.deviceRedirect = ingressRedirectTarget(rtnl_, opts_.device);
    }
    o.bridge = rtnl_.link(opts_.bridge);
    if (o.bridge) {
        o.bridgeAddresses = rtnl_.addresses(opts_.bridge);
        o.bridgeRoutes = rtnl_.routes(opts_.bridge);
        o.bridgeTxChecksum = ethtool_.txChecksum(opts_.bridge);
    }
    o.shimBridgeEnd = rtnl_.link(opts_.shimBridgeEnd);
    if (o.shimBridgeEnd) {
        o.shimTxChecksum = ethtool_.txChecksum(opts_.shimBridgeEnd);
        o.shimRedirect = ingressRedirectTarget(rtnl_, opts_.shimBridgeEnd);
    }
    o.shimOvsEnd = rtnl_.link(opts_.shimOvsEnd);
    o.legacyBridge = rtnl_.link(kLegacyShimBridge);
    o.record = loadRecord(opts_.recordFile);
    if (replica) o.ovs = ovsViewOf(opts_, *replica);
    return o;
}

void UplinkKernel::apply(const UplinkAction& action) {
    std::visit(
        [this](const auto& a) {
            using T = std::decay_t<decltype(a)>;
            if constexpr (std::is_same_v<T, step::CreateVeth>) {
                rtnl_.createVeth(a.name, a.peer, a.mtu);
            } else if constexpr (std::is_same_v<T, step::DeleteLink>) {
                rtnl_.deleteLink(a.name);
            } else if constexpr (std::is_same_v<T, step::SetMtu>) {
                rtnl_.setMtu(a.link, a.mtu);
            } else if constexpr (std::is_same_v<T, step::SetMac>) {
                rtnl_.setMac(a.link, a.mac);
            } else if constexpr (std::is_same_v<T, step::SetUp>) {
                rtnl_.setUp(a.link, a.up);
            } else if constexpr (std::is_same_v<T, step::Isolate>) {
                isolateLink(a.link);
            } else if constexpr (std::is_same_v<T, step::TxChecksumOff>) {
                ethtool_.setTxChecksum(a.link, false);
            } else if constexpr (std::is_same_v<T, step::SetNomaster>) {
                rtnl_.setNomaster(a.link);
            } else if constexpr (std::is_same_v<T, step::AddRedirect>) {
                addIngressRedirect(rtnl_, a.from, a.to);
            } else if constexpr (std::is_same_v<T, step::RemoveRedirect>) {
                removeIngressRedirect(rtnl_, a.from);
            } else if constexpr (std::is_same_v<T, step::AddAddress>) {
                rtnl_.addAddress(a.link, a.address);
            } else if constexpr (std::is_same_v<T, step::DeleteAddress>) {
                rtnl_.deleteAddress(a.link, a.address);
            } else if constexpr (std::is_same_v<T, step::AddRoute>) {
                rtnl_.addRoute(a.link, a.route);
            } else if constexpr (std::is_same_v<T, step::DeleteRoute>) {
                rtnl_.deleteRoute(a.link, a.route);
            } else if constexpr (std::is_same_v<T, step::WriteRecord>) {
                saveRecord(opts_.recordFile, a.record);
            } else {
                static_assert(std::is_same_v<T, step::RemoveRecord>);
                removeRecord(opts_.recordFile);
            }
        },
        action);
}

}  // namespace kovs::uplink
