#pragma once
// kovs-cni as the pod's network plugin: veth pair, IPAM, addresses and routes
// in the pod, TX checksum off inside the pod, host end on the OVS bridge.
#include <nlohmann/json.hpp>

#include <optional>

#include "cni/CniRequest.hpp"

namespace kovs::cni {

class MainMode {
public:
    explicit MainMode(const CniRequest& req) : req_(req) {}

    nlohmann::json add();
    void del();
    void check();
    void gc();
    void status();

private:
    const CniRequest& req_;
};

}  // namespace kovs::cni
