#include "ovs/PodPortIds.hpp"

#include <sstream>

namespace kovs::ovs {
namespace {

constexpr const char* kNetwork = "cni-network";
constexpr const char* kContainerId = "cni-container-id";
constexpr const char* kIfname = "cni-ifname";
constexpr const char* kNetns = "cni-netns";
constexpr const char* kPodNamespace = "k8s-pod-namespace";
constexpr const char* kPodName = "k8s-pod-name";
constexpr const char* kMac = "attached-mac";
constexpr const char* kIps = "ip-address";

}  // namespace

PodPortIds PodPortIds::parse(const std::map<std::string, std::string>& ids) {
    auto get = [&](const char* k) {
        auto it = ids.find(k);
        return it == ids.end() ? std::string() : it->second;
    };
    return {get(kOwnerKey), get(kNetwork),      get(kContainerId), get(kIfname), get(kNetns),
            get(kPodNamespace), get(kPodName), get(kMac),         get(kIps)};
}

std::map<std::string, std::string> PodPortIds::toMap() const {
    std::map<std::string, std::string> ids{{kOwnerKey, owner}};
    for (auto [k, v] : {std::pair{kNetwork, &network}, {kContainerId, &containerId}, {kIfname, &ifname}, {kNetns, &netns},
                        {kPodNamespace, &podNamespace}, {kPodName, &podName}, {kMac, &mac}, {kIps, &ipAddresses}}) {
        if (!v->empty()) ids[k] = *v;
    }
    return ids;
}

std::vector<std::string> PodPortIds::addresses() const {
    std::vector<std::string> out;
    std::stringstream list(ipAddresses);
    for (std::string cidr; std::getline(list, cidr, ',');) {
        if (!cidr.empty()) out.push_back(cidr.substr(0, cidr.find('/')));
    }
    return out;
}

}  // namespace kovs::ovs
