#include "cni/PodPorts.hpp"

#include <algorithm>

#include "base/Error.hpp"

namespace kovs::cni {
namespace {

using ovsdb::Transaction;
using Json = nlohmann::json;

const Json& rowsOf(const Json& result, const std::string& what) {
    if (!result.is_object() || !result.contains("rows") || !result["rows"].is_array()) {
        throw Error("ovsdb select " + what + ": reply has no rows");
    }
    return result["rows"];
}

std::optional<int64_t> ofportOf(const Json& rows) {
    if (rows.empty()) return std::nullopt;
    auto elems = ovsdb::setElements(rows[0].value("ofport", Json::array({"set", Json::array()})));
    if (elems.size() == 1 && elems[0].is_number_integer()) return elems[0].get<int64_t>();
    return std::nullopt;
}

}  // namespace

std::vector<std::string> PodPorts::bridgePortUuids(const Json& selectResult) const {
    const auto& rows = rowsOf(selectResult, "Bridge " + bridge_);
    if (rows.empty()) throw Error("ovsdb bridge " + bridge_ + ": does not exist");
    return ovsdb::uuidSet(rows[0].at("ports"));
}

bool PodPorts::bridgeReady() {
    Transaction t;
    t.select("Bridge", ovsdb::whereName(bridge_), {"name"}, bridge_);
    t.select("Interface", ovsdb::whereName(bridge_), {"ofport"}, bridge_);
    auto r = db_.transactSync(t);
    if (rowsOf(r.at(0), "Bridge " + bridge_).empty()) return false;
    auto ofport = ofportOf(rowsOf(r.at(1), "Interface " + bridge_));
    return ofport && *ofport > 0;
}

void PodPorts::add(const PodPort& port) {
    auto idMap = port.ids.toMap();
    idMap[ovs::PodPortIds::kOwnerKey] = ovs::PodPortIds::kCniOwner;
    auto ids = ovsdb::map(idMap);
    Transaction t;
    // Without the wait, a missing bridge would make the mutate match nothing and
    // the commit "succeed" with the new rows garbage-collected.
    t.wait("Bridge", ovsdb::whereName(bridge_), {"name"}, Json::array({{{"name", bridge_}}}), "==", bridge_);
    t.insert("Interface", {{"name", port.name}, {"external_ids", ids}}, "iface", port.name);
    t.insert("Port", {{"name", port.name}, {"interfaces", ovsdb::namedUuid("iface")}, {"external_ids", ids}}, "port",
             port.name);
    t.mutate("Bridge", ovsdb::whereName(bridge_),
             Json::array({Json::array({"ports", "insert", ovsdb::set({ovsdb::namedUuid("port")})})}), bridge_);
    t.comment("kovs-cni: add " + port.name + " for " + port.ids.containerId + "/" + port.ids.ifname);
    try {
        db_.transactSync(t);
    } catch (const Error& e) {
        throw Error("ovsdb add port " + port.name + " to " + bridge_ + ": " + e.what());
    }
}

bool PodPorts::remove(const std::string& name) {
    Transaction sel;
    sel.select("Port", ovsdb::whereName(name), {"_uuid"}, name);
    auto selected = db_.transactSync(sel);
    const auto& rows = rowsOf(selected.at(0), "Port " + name);
    if (rows.empty()) return false;
    auto uuid = ovsdb::uuidSet(rows[0].at("_uuid"));
    if (uuid.empty()) throw Error("ovsdb Port " + name + ": row has no _uuid");
    Transaction t;
    t.mutate("Bridge", ovsdb::whereName(bridge_),
             Json::array({Json::array({"ports", "delete", ovsdb::set({ovsdb::uuid(uuid[0])})})}), bridge_);
    t.comment("kovs-cni: remove " + name);
    try {
        db_.transactSync(t);
    } catch (const Error& e) {
        throw Error("ovsdb remove port " + name + " from " + bridge_ + ": " + e.what());
    }
    return true;
}

std::optional<PodPort> PodPorts::find(const std::string& name) {
    Transaction t;
    t.select("Bridge", ovsdb::whereName(bridge_), {"ports"}, bridge_);
    t.select("Port", ovsdb::whereName(name), {"_uuid", "external_ids"}, name);
    t.select("Interface", ovsdb::whereName(name), {"ofport"}, name);
    auto r = db_.transactSync(t);
    auto onBridge = bridgePortUuids(r.at(0));
    const auto& rows = rowsOf(r.at(1), "Port " + name);
    if (rows.empty()) return std::nullopt;
    auto uuid = ovsdb::uuidSet(rows[0].at("_uuid"));
    if (uuid.empty() || std::find(onBridge.begin(), onBridge.end(), uuid[0]) == onBridge.end()) return std::nullopt;
    PodPort port{name, ovs::PodPortIds::parse(ovsdb::mapValue(rows[0].at("external_ids"))), std::nullopt};
    port.ofport = ofportOf(rowsOf(r.at(2), "Interface " + name));
    return port;
}

std::vector<PodPort> PodPorts::list() {
    Transaction t;
    t.select("Bridge", ovsdb::whereName(bridge_), {"ports"}, bridge_);
    t.select("Port",
             Json::array({ovsdb::cond("external_ids", "includes", ovsdb::map({{ovs::PodPortIds::kOwnerKey, ovs::PodPortIds::kCniOwner}}))}),
             {"_uuid", "name", "external_ids"}, std::string(ovs::PodPortIds::kOwnerKey) + "=" + ovs::PodPortIds::kCniOwner);
    auto r = db_.transactSync(t);
    auto onBridge = bridgePortUuids(r.at(0));
    std::vector<PodPort> out;
    for (const auto& row : rowsOf(r.at(1), "Port")) {
        auto uuid = ovsdb::uuidSet(row.at("_uuid"));
        if (uuid.empty() || std::find(onBridge.begin(), onBridge.end(), uuid[0]) == onBridge.end()) continue;
        out.push_back({ovsdb::stringOr(row, "name"), ovs::PodPortIds::parse(ovsdb::mapValue(row.at("external_ids"))), std::nullopt});
    }
    return out;
}

}  // namespace kovs::cni
