#pragma once
// The CNI result kovs-cni returns in main mode (SPEC.md "Success"), built from
// the IPAM plugin's result plus the interfaces kovs made, and written in the
// shape of the configuration's cniVersion.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kovs::cni {

struct ResultInterface {
    std::string name;
    std::string mac;
    std::string sandbox;  // empty for the host end
    std::optional<int> mtu;
};

struct ResultIp {
    std::string address;  // CIDR: "10.244.0.5/24"
    std::string gateway;  // may be empty
    std::optional<size_t> interface;
    bool isV6() const { return address.find(':') != std::string::npos; }
};

struct ResultRoute {
    std::string dst;  // CIDR
    std::string gw;   // may be empty
};

struct CniResult {
    std::vector<ResultInterface> interfaces;
    std::vector<ResultIp> ips;
    std::vector<ResultRoute> routes;
    nlohmann::json dns = nlohmann::json::object();

    // Reads an IPAM result or a prevResult (any supported version); throws
    // CniError(kDecodeFailure) naming the field that does not fit.
    static CniResult fromJson(const nlohmann::json& j, const std::string& what);
    nlohmann::json toJson(const std::string& cniVersion) const;
};

}  // namespace kovs::cni
