#pragma once
// The pod ports kovs-cni owns on one OVS bridge, over OVSDB. Each port's
// Port and Interface rows carry external_ids naming the attachment, so DEL,
// CHECK, GC and the agent's offload sweep find them without other state:
//   kovs-owner=kovs-cni, cni-network, cni-container-id, cni-ifname,
//   cni-netns, k8s-pod-namespace, k8s-pod-name, attached-mac, ip-address
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ovs/OvsdbClient.hpp"
#include "cni/CniRequest.hpp"

namespace kovs::cni {

struct PodPort {
    std::string name;  // the host end of the veth
    std::string network;  // the network config's name ("" on ports from before it was recorded)
    Attachment attachment;
    std::string netns;
    std::string podNamespace;
    std::string podName;
    std::optional<int64_t> ofport;  // set by ovs-vswitchd once it opened the device
    // The pod side of the attachment, for the agent's standalone flow table
    // (OVS's conventional "attached-mac", and "ip-address": CIDRs, comma-separated).
    std::string podMac;
    std::string ipAddresses;
};

class PodPorts {
public:
    static constexpr const char* kOwner = "kovs-cni";

    PodPorts(OvsdbClient& db, std::string bridge) : db_(db), bridge_(std::move(bridge)) {}

    // The bridge exists and ovs-vswitchd has opened its local port.
    bool bridgeReady();
    // One transaction: fails (and adds nothing) when the bridge is missing or the name is taken.
    void add(const PodPort& port);
    // Detaches the port from the bridge (OVSDB drops the unreferenced rows); false when absent.
    bool remove(const std::string& name);
    std::optional<PodPort> find(const std::string& name);
    // Every kovs-cni port on this bridge.
    std::vector<PodPort> list();

    const std::string& bridge() const { return bridge_; }

private:
    std::vector<std::string> bridgePortUuids(const nlohmann::json& selectResult) const;

    OvsdbClient& db_;
    std::string bridge_;
};

}  // namespace kovs::cni
