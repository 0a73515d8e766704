#include "bridge/BridgePlanner.hpp"

#include <algorithm>
#include <cctype>

#include "base/Error.hpp"
#include "base/InterfaceName.hpp"
#include "base/MacAddress.hpp"

namespace kovs::bridge {

using ovsdb::Json;

// uuid-names must be identifiers; bridge names ("br-int") are not.
struct BridgePlanner::Names {
    int n = 0;
    std::string next(const std::string& kind) { return kind + std::to_string(++n); }
};

namespace {

void checkName(const std::string& what, const std::string& name) {
    // Internal ports become kernel tap devices: the kernel's naming rule applies.
    checkInterfaceName("bridge options: " + what, name);
}

}  // namespace

BridgePlanner::BridgePlanner(BridgeOptions opts) : opts_(std::move(opts)) {
    checkName("integration bridge", opts_.integrationBridge);
    if (!opts_.physBridge.empty()) checkName("physical bridge", opts_.physBridge);
    if (!opts_.gatewayPort.empty()) checkName("gateway port", opts_.gatewayPort);
    if (!opts_.tunnelPort.empty()) checkName("tunnel port", opts_.tunnelPort);
    if (opts_.gatewayMtu && (*opts_.gatewayMtu < 68 || *opts_.gatewayMtu > 65535))
        throw Error("bridge options: gateway MTU " + std::to_string(*opts_.gatewayMtu) + " is not in 68..65535");
    std::vector<std::string> all{opts_.integrationBridge, opts_.physBridge, opts_.gatewayPort, opts_.tunnelPort};
    if (opts_.uplink) {
        if (opts_.physBridge.empty()) throw Error("bridge options: an uplink port needs a physical bridge");
        checkName("uplink port", opts_.uplink->port);
        MacAddress::parse(opts_.uplink->hwaddr, "bridge options: uplink hwaddr");
        all.push_back(opts_.uplink->port);
    }
    for (size_t i = 0; i < all.size(); ++i)
        for (size_t j = i + 1; j < all.size(); ++j)
            if (!all[i].empty() && all[i] == all[j])
                throw Error("bridge options: name '" + all[i] + "' used for two bridges/ports");
    if (opts_.tunnelDstPort < 1 || opts_.tunnelDstPort > 65535)
        throw Error("bridge options: tunnel dst_port " + std::to_string(opts_.tunnelDstPort) + " is not in 1..65535");
    if (opts_.failMode && *opts_.failMode != "secure" && *opts_.failMode != "standalone")
        throw Error("bridge options: fail_mode '" + *opts_.failMode + "' is not secure or standalone");
    if (opts_.owner.empty()) throw Error("bridge options: owner is empty");
    // Always desired, even with no port of kovs's on it: an owned port an
    // older kovs left there is found and removed only on a bridge the plan visits.
    DesiredBridge integ{opts_.integrationBridge, opts_.createIntegrationBridge, opts_.failMode, {}, {}};
    integ.ports.push_back({opts_.integrationBridge, "internal", {}, std::nullopt});
    if (!opts_.gatewayPort.empty()) integ.ports.push_back({opts_.gatewayPort, "internal", {}, opts_.gatewayMtu});
    if (!opts_.tunnelPort.empty()) {
        integ.ports.push_back({opts_.tunnelPort,
                               opts_.tunnelType,
                               {{"remote_ip", "flow"}, {"key", "flow"}, {"dst_port", std::to_string(opts_.tunnelDstPort)}},
                               std::nullopt});
    }
    desired_.push_back(std::move(integ));
    if (!opts_.physBridge.empty()) {
        DesiredBridge phys{opts_.physBridge, true, std::nullopt, {}, {}};
        phys.ports.push_back({opts_.physBridge, "internal", {}, std::nullopt});
        if (opts_.uplink) {
            phys.ports.push_back({opts_.uplink->port, opts_.uplink->type, {}, std::nullopt});
            // The node's IP<->MAC binding stays eth0's: peers and the Docker
            // host keep the neighbour entry they have.
            phys.otherConfig["hwaddr"] = MacAddress::parse(opts_.uplink->hwaddr).str();
        }
        desired_.push_back(std::move(phys));
    }
}

Json BridgePlanner::ownerMap() const { return ovsdb::map({{opts_.ownerKey, opts_.owner}}); }

bool BridgePlanner::owned(const Json& row) const {
    auto it = row.find("external_ids");
    if (it == row.end()) return false;
    auto ids = ovsdb::mapValue(*it);
    auto o = ids.find(opts_.ownerKey);
    return o != ids.end() && o->second == opts_.owner;
}

namespace {

Json failModeValue(const std::optional<std::string>& fm) { return fm ? Json(*fm) : ovsdb::set({}); }

Json insertInto(const std::string& column, const Json& uuids) {
    return Json::array({Json::array({column, "insert", uuids})});
}

// The Interface row of a port that carries the port's own name.
std::optional<std::pair<std::string, Json>> interfaceOf(const ovs::OvsdbReplica& db, const Json& port,
                                                        const std::string& name) {
    for (const auto& u : ovsdb::uuidSet(port.value("interfaces", Json()))) {
        const auto* row = db.row("Interface", u);
        if (row && ovsdb::stringOr(*row, "name") == name) return std::make_pair(u, *row);
    }
    return std::nullopt;
}

// mtu_request is an optional integer: a bare number, or ["set", []] when unset.
std::optional<int> mtuRequestOf(const Json& iface) {
    auto it = iface.find("mtu_request");
    if (it == iface.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int>();
}

}  // namespace

BridgePlan BridgePlanner::plan(const ovs::OvsdbReplica& db) const {
    BridgePlan out;
    Names names;
    const auto& roots = db.table("Open_vSwitch");
    std::string root;
    if (roots.empty()) {
        // A fresh database: create the root row that ovs-vsctl init would, but
        // only if nobody else did meanwhile.
        out.txn.wait("Open_vSwitch", Json::array(), {"_uuid"}, Json::array(), "==", "(root)");
        out.txn.insert("Open_vSwitch", Json::object(), "root", "(root)");
        out.changes.push_back("create the Open_vSwitch root row");
        root = "";
    } else {
        root = roots.begin()->first;
    }
    for (const auto& br : desired_) planBridge(db, br, root, out, names);
    return out;
}

void BridgePlanner::planBridge(const ovs::OvsdbReplica& db, const DesiredBridge& br, const std::string& root,
                               BridgePlan& out, Names& names) const {
    auto& txn = out.txn;
    Json rootWhere = root.empty() ? Json::array() : ovsdb::whereUuid(root);
    auto existing = db.findByName("Bridge", br.name);

    // Builds Interface + Port rows for one desired port; returns its uuid-name.
    auto insertPort = [&](const DesiredInterface& p) {
        std::string iface = names.next("iface"), port = names.next("port");
        Json irow = {{"name", p.name}, {"type", p.type}, {"external_ids", ownerMap()}};
        if (!p.options.empty()) irow["options"] = ovsdb::map(p.options);
        if (p.mtuRequest) irow["mtu_request"] = *p.mtuRequest;
        txn.insert("Interface", irow, iface, p.name);
        txn.insert("Port", {{"name", p.name}, {"interfaces", ovsdb::namedUuid(iface)}, {"external_ids", ownerMap()}},
                   port, p.name);
        return port;
    };

    if (!existing && !br.create) {
        bool wanted = std::any_of(br.ports.begin(), br.ports.end(), [&](const DesiredInterface& p) { return p.name != br.name; });
        if (wanted) out.foreign.push_back("bridge " + br.name + " does not exist: waiting for the CNI that owns it to create it");
        return;
    }
    if (!existing) {
        std::vector<Json> ports;
        for (const auto& p : br.ports) {
            auto other = db.findByName("Port", p.name);
            if (other && !owned(other->second)) {
                out.foreign.push_back("port " + p.name + " exists and is not kovs's: not adding it to " + br.name);
                continue;
            }
            // An owned port still sitting in another bridge is moved.
            if (other) {
                for (const auto& [bu, brow] : db.table("Bridge")) {
                    auto pu = ovsdb::uuidSet(brow.value("ports", Json()));
                    if (std::find(pu.begin(), pu.end(), other->first) == pu.end()) continue;
                    txn.mutate("Bridge", ovsdb::whereUuid(bu),
                               Json::array({Json::array({"ports", "delete", ovsdb::set({ovsdb::uuid(other->first)})})}),
                               ovsdb::stringOr(brow, "name"));
                }
                ports.push_back(ovsdb::uuid(other->first));
                continue;
            }
            ports.push_back(ovsdb::namedUuid(insertPort(p)));
        }
        std::string bname = names.next("bridge");
        Json row = {{"name", br.name},
                    {"datapath_type", opts_.datapathType},
                    {"ports", ovsdb::set(ports)},
                    {"external_ids", ownerMap()}};
        if (br.failMode) row["fail_mode"] = *br.failMode;
        if (!br.otherConfig.empty()) row["other_config"] = ovsdb::map(br.otherConfig);
        // Guard: nobody created the bridge since our replica was current.
        txn.wait("Bridge", ovsdb::whereName(br.name), {"name"}, Json::array(), "==", br.name);
        txn.insert("Bridge", row, bname, br.name);
        txn.mutate("Open_vSwitch", rootWhere, insertInto("bridges", ovsdb::set({ovsdb::namedUuid(bname)})), "(root)");
        out.changes.push_back("create bridge " + br.name);
        return;
    }

    const auto& [buuid, brow] = *existing;
    bool ownBridge = owned(brow);
    if (ownBridge) {
        Json update = Json::object();
        if (ovsdb::stringOr(brow, "datapath_type") != opts_.datapathType) update["datapath_type"] = opts_.datapathType;
        if (ovsdb::stringOr(brow, "fail_mode") != br.failMode.value_or("")) update["fail_mode"] = failModeValue(br.failMode);
        if (!update.empty()) {
            txn.update("Bridge", ovsdb::whereUuid(buuid), update, br.name);
            out.changes.push_back("fix bridge " + br.name + " " + update.dump());
        }
        auto have = ovsdb::mapValue(brow.value("other_config", Json()));
        for (const auto& [key, value] : br.otherConfig) {
            auto it = have.find(key);
            if (it != have.end() && it->second == value) continue;
            txn.mutate("Bridge", ovsdb::whereUuid(buuid),
                       Json::array({Json::array({"other_config", "delete", ovsdb::set({key})}),
                                    Json::array({"other_config", "insert", ovsdb::map({{key, value}})})}),
                       br.name);
            out.changes.push_back("set " + br.name + " other_config:" + key + "=" + value);
        }
    } else {
        out.foreign.push_back("bridge " + br.name + " is not kovs's: using it as is (companion mode)");
        if (!br.otherConfig.empty())
            out.foreign.push_back("bridge " + br.name + " is not kovs's: its other_config is left as it is");
    }

    auto bridgePorts = ovsdb::uuidSet(brow.value("ports", Json()));
    auto ownerMutation = Json::array({Json::array({"external_ids", "insert", ownerMap()})});
    std::vector<Json> addPorts;
    for (const auto& p : br.ports) {
        // The local port of a bridge someone else made is theirs.
        if (!ownBridge && p.name == br.name) continue;
        auto port = db.findByName("Port", p.name);
        if (!port) {
            addPorts.push_back(ovsdb::namedUuid(insertPort(p)));
            out.changes.push_back("add port " + p.name + " to " + br.name);
            continue;
        }
        const auto& [puuid, prow] = *port;
        bool inThisBridge = std::find(bridgePorts.begin(), bridgePorts.end(), puuid) != bridgePorts.end();
        if (!owned(prow) && !(ownBridge && inThisBridge)) {
            out.foreign.push_back("port " + p.name + " is not kovs's: leaving it alone");
            continue;
        }
        if (!owned(prow)) {
            txn.mutate("Port", ovsdb::whereUuid(puuid), ownerMutation, p.name);
            if (auto iface = interfaceOf(db, prow, p.name); iface && !owned(iface->second))
                txn.mutate("Interface", ovsdb::whereUuid(iface->first), ownerMutation, p.name);
            out.changes.push_back("adopt port " + p.name + " of " + br.name + " (made without " + opts_.ownerKey + ")");
        }
        if (std::find(bridgePorts.begin(), bridgePorts.end(), puuid) == bridgePorts.end()) {
            for (const auto& [bu, other] : db.table("Bridge")) {
                auto pu = ovsdb::uuidSet(other.value("ports", Json()));
                if (std::find(pu.begin(), pu.end(), puuid) == pu.end()) continue;
                txn.mutate("Bridge", ovsdb::whereUuid(bu),
                           Json::array({Json::array({"ports", "delete", ovsdb::set({ovsdb::uuid(puuid)})})}),
                           ovsdb::stringOr(other, "name"));
            }
            addPorts.push_back(ovsdb::uuid(puuid));
            out.changes.push_back("move port " + p.name + " to " + br.name);
        }
        auto iface = interfaceOf(db, prow, p.name);
        if (!iface) continue;  // a port with foreign interfaces is not ours to redo
        Json update = Json::object();
        if (ovsdb::stringOr(iface->second, "type") != p.type) update["type"] = p.type;
        if (ovsdb::mapValue(iface->second.value("options", Json())) != p.options) update["options"] = ovsdb::map(p.options);
        if (p.mtuRequest && mtuRequestOf(iface->second) != p.mtuRequest) update["mtu_request"] = *p.mtuRequest;
        if (!update.empty()) {
            txn.update("Interface", ovsdb::whereUuid(iface->first), update, p.name);
            out.changes.push_back("fix interface " + p.name + " " + update.dump());
        }
    }
    std::vector<Json> dropPorts;
    for (const auto& pu : bridgePorts) {
        const auto* prow = db.row("Port", pu);
        if (!prow || !owned(*prow)) continue;
        auto name = ovsdb::stringOr(*prow, "name");
        bool wanted = std::any_of(br.ports.begin(), br.ports.end(), [&](const DesiredInterface& d) { return d.name == name; });
        if (wanted) continue;
        dropPorts.push_back(ovsdb::uuid(pu));
        out.changes.push_back("remove port " + name + " from " + br.name + " (no longer wanted)");
    }
    if (!dropPorts.empty())
        txn.mutate("Bridge", ovsdb::whereUuid(buuid), Json::array({Json::array({"ports", "delete", ovsdb::set(dropPorts)})}),
                   br.name);
    if (!addPorts.empty()) {
        // Guard: the bridge we add to is still the one in our replica.
        txn.wait("Bridge", ovsdb::whereUuid(buuid), {"name"}, Json::array({{{"name", br.name}}}), "==", br.name);
        txn.mutate("Bridge", ovsdb::whereUuid(buuid), insertInto("ports", ovsdb::set(addPorts)), br.name);
    }
}

BridgePlan BridgePlanner::planCleanup(const ovs::OvsdbReplica& db) const {
    BridgePlan out;
    const auto& roots = db.table("Open_vSwitch");
    for (const auto& br : desired_) {
        auto existing = db.findByName("Bridge", br.name);
        if (!existing) continue;
        const auto& [buuid, brow] = *existing;
        if (owned(brow)) {
            // Unreferenced Bridge/Port/Interface rows are garbage-collected.
            for (const auto& [root, row] : roots) {
                out.txn.mutate("Open_vSwitch", ovsdb::whereUuid(root),
                               Json::array({Json::array({"bridges", "delete", ovsdb::set({ovsdb::uuid(buuid)})})}),
                               "(root)");
            }
            out.changes.push_back("delete bridge " + br.name);
            continue;
        }
        std::vector<Json> mine;
        for (const auto& pu : ovsdb::uuidSet(brow.value("ports", Json()))) {
            const auto* prow = db.row("Port", pu);
            if (prow && owned(*prow)) {
                mine.push_back(ovsdb::uuid(pu));
                out.changes.push_back("delete port " + ovsdb::stringOr(*prow, "name") + " from " + br.name);
            }
        }
        if (!mine.empty())
            out.txn.mutate("Bridge", ovsdb::whereUuid(buuid),
                           Json::array({Json::array({"ports", "delete", ovsdb::set(mine)})}), br.name);
    }
    return out;
}

}  // namespace kovs::bridge
