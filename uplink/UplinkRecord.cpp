#include "uplink/UplinkRecord.hpp"

#include <filesystem>
#include <fstream>

#include "base/Error.hpp"
#include "base/Log.hpp"

namespace kovs::uplink {
namespace {

using nlohmann::json;
constexpr int kVersion = 2;

json prefixOrNull(const std::optional<IpPrefix>& p) { return p ? json(p->str()) : json(); }
std::optional<IpPrefix> prefixFrom(const json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    return IpPrefix::parse(it->get<std::string>());
}

json toJson(const AddressInfo& a) {
    return {{"local", a.local.str()}, {"scope", a.scope}, {"flags", a.flags}, {"broadcast", prefixOrNull(a.broadcast)},
            {"label", a.label}};
}

AddressInfo addressFrom(const json& j) {
    AddressInfo a;
    a.local = IpPrefix::parse(j.at("local").get<std::string>());
    a.scope = j.at("scope").get<uint8_t>();
    a.flags = j.at("flags").get<uint32_t>();
    a.broadcast = prefixFrom(j, "broadcast");
    a.label = j.value("label", "");
    return a;
}

json toJson(const RouteInfo& r) {
    return {{"dst", r.dst.str()},         {"gateway", prefixOrNull(r.gateway)}, {"priority", r.priority},
            {"protocol", r.protocol},     {"scope", r.scope},                   {"type", r.type},
            {"table", r.table},           {"prefsrc", prefixOrNull(r.prefsrc)}, {"onlink", r.onlink}};
}

RouteInfo routeFrom(const json& j) {
    RouteInfo r;
    r.dst = IpPrefix::parse(j.at("dst").get<std::string>());
    r.gateway = prefixFrom(j, "gateway");
    r.priority = j.at("priority").get<uint32_t>();
    r.protocol = j.at("protocol").get<uint8_t>();
    r.scope = j.at("scope").get<uint8_t>();
    r.type = j.at("type").get<uint8_t>();
    r.table = j.at("table").get<uint32_t>();
    r.prefsrc = prefixFrom(j, "prefsrc");
    r.onlink = j.at("onlink").get<bool>();
    return r;
}

}  // namespace

json toJson(const UplinkRecord& r) {
    json addresses = json::array(), routes = json::array();
    for (const auto& a : r.addresses) addresses.push_back(toJson(a));
    for (const auto& x : r.routes) routes.push_back(toJson(x));
    return {{"version", kVersion}, {"mode", r.mode},           {"device", r.device}, {"mac", r.mac},
            {"mtu", r.mtu},        {"addresses", addresses}, {"routes", routes}};
}

UplinkRecord recordFromJson(const json& j) {
    try {
        if (j.value("version", 0) != kVersion) throw Error("version is not " + std::to_string(kVersion));
        UplinkRecord r;
        r.mode = j.at("mode").get<std::string>();
        r.device = j.at("device").get<std::string>();
        r.mac = j.at("mac").get<std::string>();
        r.mtu = j.at("mtu").get<unsigned>();
        for (const auto& a : j.at("addresses")) r.addresses.push_back(addressFrom(a));
        for (const auto& x : j.at("routes")) r.routes.push_back(routeFrom(x));
        return r;
    } catch (const json::exception& e) {
        throw Error(std::string("uplink record: ") + e.what());
    } catch (const Error& e) {
        throw Error(std::string("uplink record: ") + e.what());
    }
}

std::optional<UplinkRecord> loadRecord(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    auto j = json::parse(in, nullptr, false);
    try {
        if (j.is_discarded()) throw Error("not JSON");
        return recordFromJson(j);
    } catch (const Error& e) {
        spdlog::warn("uplink: ignoring {} ({}): the interfaces say where the addresses are", path, e.what());
        return std::nullopt;
    }
}

void saveRecord(const std::string& path, const UplinkRecord& r) {
    std::filesystem::path p(path);
    std::error_code ec;
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) throw Error("uplink record " + path + ": create directory: " + ec.message());
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp);
        out << toJson(r).dump(2) << "\n";
        if (!out.flush()) throw Error("uplink record " + path + ": cannot write " + tmp);
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw Error("uplink record " + path + ": rename: " + ec.message());
}

void removeRecord(const std::string& path) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    if (ec) throw Error("uplink record " + path + ": remove: " + ec.message());
}

}  // namespace kovs::uplink
