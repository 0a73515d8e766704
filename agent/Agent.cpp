#include "agent/Agent.hpp"

#include <spdlog/spdlog.h>

#include "agent/NetworkdDropins.hpp"

namespace kovs {

Agent::Agent(EventLoop& loop, Config config) : loop_(loop), config_(std::move(config)) {}

Agent::~Agent() = default;

GatewayGuardOptions Agent::gatewayOptions() const {
    GatewayGuardOptions o;
    o.enabled = config_.gateway.guard;
    o.name = config_.bridge.gateway;
    o.mtu = config_.gatewayMtu();
    if (config_.gateway.addresses.empty()) {
        o.addresses.push_back(gatewayAddressFor(config_.node.podCIDR));
    } else {
        for (const auto& a : config_.gateway.addresses) o.addresses.push_back(IpPrefix::parse(a));
    }
    for (const auto& r : config_.gateway.extraRoutes) o.routes.push_back({IpPrefix::parse(r).network(), std::nullopt});
    o.resyncInterval = config_.gateway.resync;
    return o;
}

// networkd must leave alone every interface kovs configures, but never the
// node's uplink (eth0), which the node's own network config may manage.
std::vector<std::string> Agent::dropinInterfaces() const {
    std::vector<std::string> names{config_.bridge.gateway};
    if (config_.uplink.mode != Config::UplinkMode::None) names.push_back(config_.bridge.physical);
    return names;
}

void Agent::start() {
    NetworkdDropins(config_.gateway.networkdDropinDir).install(dropinInterfaces());
    gateway_.emplace(loop_, gatewayOptions());
    spdlog::info("kovs-agent started on node {} (pod CIDR {}, gateway {})", config_.node.name,
                 config_.node.podCIDR, config_.bridge.gateway);
}

bool Agent::runOnce() {
    start();
    gateway_->reconcileNow();
    auto s = gateway_->stats();
    return !config_.gateway.guard || s.linkPresent;
}

void Agent::cleanup() {
    NetworkdDropins(config_.gateway.networkdDropinDir).remove(dropinInterfaces());
    spdlog::info("kovs-agent cleanup done");
}

}  // namespace kovs
