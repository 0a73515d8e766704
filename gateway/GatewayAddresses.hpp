#pragma once
// The gateway guard's address step: the addresses of gw0, observed from one
// dump, planned by planGatewayAddresses (gateway/GatewayAddressPlan.hpp:
// configured ones exactly, or on another CNI's device the ones it was
// given), applied as removals and additions. Nothing is ever removed from an
// adopted device.
#include <string>
#include <vector>

#include "base/IpPrefix.hpp"
#include "base/RtnetlinkClient.hpp"
#include "gateway/GatewayAddressPlan.hpp"
#include "gateway/GatewayRepairs.hpp"


namespace kovs::gateway {

class GatewayAddresses {
public:
    GatewayAddresses(std::string name, GatewayAddressPolicy policy);

    void reconcile(RtnetlinkClient& nl, GatewayRepairs& r);
    // The addresses kept: configured, or adopted from the device. The
    // gateway's prefix routes and route sources follow these.
    const std::vector<IpPrefix>& guarded() const { return guarded_; }

private:
    std::string name_;
    GatewayAddressPolicy policy_;
    std::vector<IpPrefix> guarded_;
};

}  // namespace kovs::gateway
