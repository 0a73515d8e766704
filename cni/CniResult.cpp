#include "cni/CniResult.hpp"

#include "cni/CniError.hpp"
#include "cni/CniVersion.hpp"

namespace kovs::cni {
namespace {

std::string str(const nlohmann::json& obj, const std::string& key, const std::string& where, bool isRequired) {
    if (!obj.contains(key)) {
        if (isRequired) throw CniError(kDecodeFailure, where + "." + key + " is missing");
        return "";
    }
    if (!obj.at(key).is_string()) throw CniError(kDecodeFailure, where + "." + key + " must be a string");
    return obj.at(key).get<std::string>();
}

const nlohmann::json& array(const nlohmann::json& j, const std::string& key, const std::string& where) {
    static const nlohmann::json empty = nlohmann::json::array();
    if (!j.contains(key)) return empty;
    if (!j.at(key).is_array()) throw CniError(kDecodeFailure, where + "." + key + " must be an array");
    return j.at(key);
}

}  // namespace

CniResult CniResult::fromJson(const nlohmann::json& j, const std::string& what) {
    if (!j.is_object()) throw CniError(kDecodeFailure, what + " is not a JSON object");
    CniResult r;
    const auto& ifs = array(j, "interfaces", what);
    for (size_t i = 0; i < ifs.size(); ++i) {
        auto where = what + ".interfaces[" + std::to_string(i) + "]";
        if (!ifs[i].is_object()) throw CniError(kDecodeFailure, where + " is not an object");
        ResultInterface itf{str(ifs[i], "name", where, true), str(ifs[i], "mac", where, false),
                            str(ifs[i], "sandbox", where, false), std::nullopt};
        if (ifs[i].contains("mtu") && ifs[i].at("mtu").is_number_integer()) itf.mtu = ifs[i].at("mtu").get<int>();
        r.interfaces.push_back(std::move(itf));
    }
    const auto& ips = array(j, "ips", what);
    for (size_t i = 0; i < ips.size(); ++i) {
        auto where = what + ".ips[" + std::to_string(i) + "]";
        if (!ips[i].is_object()) throw CniError(kDecodeFailure, where + " is not an object");
        ResultIp ip{str(ips[i], "address", where, true), str(ips[i], "gateway", where, false), std::nullopt};
        if (ips[i].contains("interface")) {
            if (!ips[i].at("interface").is_number_unsigned()) throw CniError(kDecodeFailure, where + ".interface must be an index");
            ip.interface = ips[i].at("interface").get<size_t>();
        }
        r.ips.push_back(std::move(ip));
    }
    const auto& routes = array(j, "routes", what);
    for (size_t i = 0; i < routes.size(); ++i) {
        auto where = what + ".routes[" + std::to_string(i) + "]";
        if (!routes[i].is_object()) throw CniError(kDecodeFailure, where + " is not an object");
        r.routes.push_back({str(routes[i], "dst", where, true), str(routes[i], "gw", where, false)});
    }
    if (j.contains("dns")) {
        if (!j.at("dns").is_object()) throw CniError(kDecodeFailure, what + ".dns must be an object");
        r.dns = j.at("dns");
    }
    return r;
}

nlohmann::json CniResult::toJson(const std::string& cniVersion) const {
    // 0.3.x and 0.4.0 tag each IP with its family; 1.0.0 dropped that.
    bool legacy = !versionAtLeast(cniVersion, "1.0.0");
    nlohmann::json j = {{"cniVersion", cniVersion}};
    auto& ifs = j["interfaces"] = nlohmann::json::array();
    for (const auto& i : interfaces) {
        nlohmann::json o = {{"name", i.name}};
        if (!i.mac.empty()) o["mac"] = i.mac;
        if (!i.sandbox.empty()) o["sandbox"] = i.sandbox;
        if (i.mtu && versionAtLeast(cniVersion, "1.1.0")) o["mtu"] = *i.mtu;  // new in 1.1.0
        ifs.push_back(std::move(o));
    }
    auto& ipsOut = j["ips"] = nlohmann::json::array();
    for (const auto& ip : ips) {
        nlohmann::json o = {{"address", ip.address}};
        if (legacy) o["version"] = ip.isV6() ? "6" : "4";
        if (!ip.gateway.empty()) o["gateway"] = ip.gateway;
        if (ip.interface) o["interface"] = *ip.interface;
        ipsOut.push_back(std::move(o));
    }
    auto& routesOut = j["routes"] = nlohmann::json::array();
    for (const auto& r : routes) {
        nlohmann::json o = {{"dst", r.dst}};
        if (!r.gw.empty()) o["gw"] = r.gw;
        routesOut.push_back(std::move(o));
    }
    j["dns"] = dns;
    return j;
}

}  // namespace kovs::cni
