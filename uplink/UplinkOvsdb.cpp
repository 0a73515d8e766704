#include "uplink/UplinkOvsdb.hpp"

#include <thread>

#include "base/Error.hpp"

namespace kovs::tunnel {
namespace {

using ovsdb::Json;

OvsdbClientOptions transactOnly(const std::string& remote, std::chrono::milliseconds timeout) {
    OvsdbClientOptions o;
    o.remote = remote;
    o.monitorTables = {};
    o.requestTimeout = timeout;
    return o;
}

const Json& rows(const Json& result) { return result.at("rows"); }

}  // namespace

UplinkOvsdb::UplinkOvsdb(const std::string& remote, std::chrono::milliseconds timeout)
    : timeout_(timeout), db_(loop_, transactOnly(remote, timeout)) {
    if (!db_.waitReady(timeout)) throw Error("ovsdb " + remote + ": not reachable within " + std::to_string(timeout.count()) + " ms");
}

Json UplinkOvsdb::openVswitchRow(const std::vector<std::string>& columns) {
    ovsdb::Transaction t;
    t.select("Open_vSwitch", Json::array(), columns, ".");
    auto r = rows(db_.transactSync(t).at(0));
    if (r.empty()) throw Error("ovsdb: no Open_vSwitch row (database not initialised)");
    return r[0];
}

std::vector<std::string> UplinkOvsdb::ifaceTypes() {
    std::vector<std::string> out;
    for (const auto& t : ovsdb::setElements(openVswitchRow({"iface_types"}).at("iface_types"))) out.push_back(t.get<std::string>());
    return out;
}

bool UplinkOvsdb::dpdkInitialized() {
    auto v = openVswitchRow({"dpdk_initialized"}).at("dpdk_initialized");
    return v.is_boolean() && v.get<bool>();
}

std::string UplinkOvsdb::bridgeOf(const std::string& port) {
    ovsdb::Transaction t;
    t.select("Port", ovsdb::whereName(port), {"_uuid"}, port);
    t.select("Bridge", Json::array(), {"name", "ports"}, "bridges");
    auto r = db_.transactSync(t);
    if (rows(r[0]).empty()) return "";
    auto uuid = ovsdb::uuidSet(rows(r[0])[0].at("_uuid"));
    for (const auto& br : rows(r[1])) {
        for (const auto& p : ovsdb::uuidSet(br.at("ports"))) {
            if (!uuid.empty() && p == uuid[0]) return ovsdb::stringOr(br, "name");
        }
    }
    return "";
}

std::vector<Json> UplinkOvsdb::commitAndWait(ovsdb::Transaction& txn) {
    txn.mutate("Open_vSwitch", Json::array(), Json::array({Json::array({"next_cfg", "+=", 1})}), "next_cfg");
    txn.select("Open_vSwitch", Json::array(), {"next_cfg"}, "next_cfg");
    auto r = db_.transactSync(txn);
    int64_t want = rows(r.back()).at(0).at("next_cfg").get<int64_t>();
    auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (true) {
        auto cur = openVswitchRow({"cur_cfg"}).at("cur_cfg");
        if (cur.is_number_integer() && cur.get<int64_t>() >= want) return r;
        if (std::chrono::steady_clock::now() >= deadline)
            throw Error(txn.describeAll() + ": ovs-vswitchd did not apply it within " + std::to_string(timeout_.count()) +
                        " ms (is it running?)");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

void UplinkOvsdb::addPort(const std::string& bridge, const std::string& port, const std::string& type) {
    ovsdb::Transaction t;
    Json iface{{"name", port}};
    if (!type.empty() && type != "system") iface["type"] = type;
    t.insert("Interface", iface, "iface", port);
    t.insert("Port", {{"name", port}, {"interfaces", ovsdb::namedUuid("iface")}}, "port", port);
    t.mutate("Bridge", ovsdb::whereName(bridge),
             Json::array({Json::array({"ports", "insert", ovsdb::set({ovsdb::namedUuid("port")})})}), bridge);
    auto r = commitAndWait(t);
    if (r.at(2).value("count", 0) != 1) throw Error("add port " + port + " to " + bridge + ": no such bridge");
}

void UplinkOvsdb::removePort(const std::string& bridge, const std::string& port) {
    ovsdb::Transaction q;
    q.select("Port", ovsdb::whereName(port), {"_uuid"}, port);
    auto found = rows(db_.transactSync(q).at(0));
    if (found.empty()) return;
    auto uuid = ovsdb::uuidSet(found[0].at("_uuid"));
    ovsdb::Transaction t;
    t.mutate("Bridge", ovsdb::whereName(bridge),
             Json::array({Json::array({"ports", "delete", ovsdb::set({ovsdb::uuid(uuid.at(0))})})}), bridge);
    commitAndWait(t);
}

void UplinkOvsdb::setHwaddr(const std::string& bridge, const std::string& mac) {
    ovsdb::Transaction t;
    t.mutate("Bridge", ovsdb::whereName(bridge),
             Json::array({Json::array({"other_config", "delete", ovsdb::set({"hwaddr"})}),
                          Json::array({"other_config", "insert", ovsdb::map({{"hwaddr", mac}})})}),
             bridge);
    commitAndWait(t);
}

void UplinkOvsdb::clearHwaddr(const std::string& bridge) {
    ovsdb::Transaction t;
    t.mutate("Bridge", ovsdb::whereName(bridge),
             Json::array({Json::array({"other_config", "delete", ovsdb::set({"hwaddr"})})}), bridge);
    commitAndWait(t);
}

}  // namespace kovs::tunnel
