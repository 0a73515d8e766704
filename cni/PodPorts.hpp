#pragma once
// The pod ports kovs-cni owns on one OVS bridge, over OVSDB. Each port's
// Port and Interface rows carry external_ids naming the attachment
// (ovs/PodPortIds.hpp), so DEL, CHECK, GC and the agent's flow table and
// offload sweep find them without other state.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ovs/OvsdbClient.hpp"
#include "ovs/PodPortIds.hpp"
#include "cni/CniRequest.hpp"

namespace kovs::cni {

struct PodPort {
    std::string name;  // the host end of the veth
    ovs::PodPortIds ids;
    std::optional<int64_t> ofport;  // set by ovs-vswitchd once it opened the device
    Attachment attachment() const { return {ids.containerId, ids.ifname}; }
};

class PodPorts {
public:
    PodPorts(ovs::OvsdbClient& db, std::string bridge) : db_(db), bridge_(std::move(bridge)) {}

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

    ovs::OvsdbClient& db_;
    std::string bridge_;
};

}  // namespace kovs::cni
