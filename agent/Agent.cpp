#include "agent/Agent.hpp"

#include <net/if.h>
#include <spdlog/spdlog.h>

#include "agent/ControlCommands.hpp"
#include "agent/JobOptions.hpp"
#include "agent/NetworkdInterfaces.hpp"
#include "agent/NodeFamilies.hpp"
#include "base/LinkAddresses.hpp"
#include "uplink/Uplink.hpp"

namespace kovs::agent {

Agent::Agent(EventLoop& loop, Config config) : loop_(loop), config_(std::move(config)) {
    resolveUplinkMtu(config_);
    gatewayMtu_ = config_.gatewayMtu();
}

Agent::~Agent() {
    if (peerSource_) peerSource_->stop();
    if (policy_) policy_->stop();
    if (tunnel_) tunnel_->stop();
}

void Agent::startOvs() {
    if (config_.ovs.manage) {
        supervisor_ = std::make_unique<daemons::OvsSupervisor>(loop_, supervisorOptions(config_));
        supervisor_->setRestartHandler([this](daemons::OvsSupervisor::Daemon d, pid_t pid) {
            repairs_.record("ovs-restart", fmt::format("{} restarted as pid {}", toString(d), pid));
            // Bridges live in the database; routes, neighbours and flows lived
            // in the dead vswitchd. The tunnel job sees the new pid itself.
            if (d == daemons::OvsSupervisor::Daemon::Vswitchd && flows_) flows_->verifySoon();
        });
        supervisor_->start();
        jobs_.push_back(supervisor_.get());
    }
    ovsdb_ = std::make_unique<ovs::OvsdbClient>(loop_, ovsdbOptions(config_));
    ovsdb_->start();
    if (!ovsdb_->waitReady(std::chrono::seconds(15)))
        throw Error("ovsdb " + config_.ovsdbRemote() + ": not reachable within 15 s");
}

void Agent::startBridges() {
    // The uplink's port and br-phy's MAC are part of br-phy's desired state.
    bridges_ = std::make_unique<bridge::BridgeReconciler>(loop_, *ovsdb_, bridgeOptions(config_, ovsdb_->replica()), config_.resync);
    bridges_->setAppliedHandler([this](const bridge::BridgePlan& plan) {
        for (const auto& c : plan.changes) repairs_.record("ovsdb", c);
    });
    bridges_->start();
    jobs_.push_back(bridges_.get());
    if (!bridges_->reconcileOnce(std::chrono::seconds(30)))
        throw Error("bridges did not converge within 30 s: " + bridges_->lastError());
}

// OVSDB holding a bridge does not mean ovs-vswitchd has made its device yet.
void Agent::waitForDevice(const std::string& name, std::chrono::milliseconds timeout) {
    if (!loop_.runUntil([&] { return ::if_nametoindex(name.c_str()) != 0; }, timeout))
        throw Error(fmt::format("{}: ovs-vswitchd did not create the device within {} ms", name, timeout.count()));
}

void Agent::migrateUplink() {
    if (config_.uplink.mode == Config::UplinkMode::None) return;
    waitForDevice(config_.bridge.physical, std::chrono::seconds(15));
    auto opts = uplinkOptions(config_);
    // While it waits for vswitchd, the loop keeps the OVSDB replica current.
    // A SIGTERM meanwhile (a stopped loop no longer waits) ends the migration,
    // undone, instead of spinning here until its deadline.
    auto idle = [this] {
        if (loop_.stopped()) throw Error("stopping");
        loop_.runUntil([] { return false; }, std::chrono::milliseconds(10));
    };
    // A shim veth deleted while the agent was down: vswitchd still holds the
    // old device open, and must be made to open the new one.
    bool stale = opts.mode == uplink::UplinkMode::Shim && ::if_nametoindex(opts.shimOvsEnd.c_str()) == 0 &&
                 uplink::ovsViewOf(opts, ovsdb_->replica()).ofport > 0;
    if (uplink::Uplink(opts).migrate(ovsdb_->replica(), idle) == uplink::Uplink::Outcome::Migrated)
        repairs_.record("uplink", fmt::format("{} moved to {} ({})", opts.device, opts.bridge, uplink::modeName(opts.mode)));
    if (stale) bridges_->reattach(opts.port());
    // From here on the uplink job keeps it so.
    uplink_ = std::make_unique<uplink::UplinkGuard>(loop_, opts, ovsdb_->replica(), repairs_, config_.resync);
    uplink_->setShimRebuiltHandler([this](const std::string& port) { bridges_->reattach(port); });
    uplink_->start();
    jobs_.push_back(uplink_.get());
}

void Agent::startJobs() {
    gateway_ = std::make_unique<gateway::GatewayGuard>(loop_, gatewayOptions(config_));
    gateway_->setRestoreHandler([this](std::chrono::nanoseconds took) {
        repairs_.record("gateway", fmt::format("{} restored in {} us", config_.bridge.gateway, took.count() / 1000));
    });
    jobs_.push_back(gateway_.get());

    offload_ = std::make_unique<offload::OffloadGuard>(offloadHostDevices(config_), [this] {
        return offload::podInterfacesFromReplica(ovsdb_->replica(), config_.bridge.integration);
    });
    // Its first pass is the start-up sweep: pods created while the agent was
    // down, taps re-created by a vswitchd restart.
    offload_->attach(loop_, config_.resync);
    if (auto n = offload_->stats().repairs)
        repairs_.record("offload", fmt::format("TX checksum turned off on {} device(s) at start-up", n));
    jobs_.push_back(offload_.get());

    if (tunnelJobWanted(config_)) {
        unixctl_ = std::make_unique<ovs::UnixctlClient>(loop_, config_.ovs.rundir);
        underlay_ = std::make_unique<tunnel::KernelUnderlay>();
        tunnel_ = std::make_unique<tunnel::TunnelReconciler>(loop_, *unixctl_, *underlay_, tunnelOptions(config_));
        tunnel_->setNarrowestPathHandler([this](const tunnel::NarrowestPath& p) { followNarrowestPath(p); });
        tunnel_->start();
        jobs_.push_back(tunnel_.get());
    }
    if (standalone(config_)) {
        flows_ = std::make_unique<flows::FlowReconciler>(loop_, ovsdb_->replica(), repairs_, flowOptions(config_));
        if (!unixctl_) unixctl_ = std::make_unique<ovs::UnixctlClient>(loop_, config_.ovs.rundir);  // kovsctl trace
        jobs_.push_back(flows_.get());
        if (config_.egress.masquerade) {
            egress_ = std::make_unique<egress::EgressReconciler>(loop_, repairs_, egressOptions(config_));
            jobs_.push_back(egress_.get());
        }
    }
    socketBuffers_ = std::make_unique<daemons::SocketBufferSizer>(loop_, config_.ovs.rundir, config_.ovs.socketBufferKiB, config_.resync);
    jobs_.push_back(socketBuffers_.get());
    ovsdb_->addChangeHandler([this] {
        if (flows_) flows_->onDatabaseChange();
        offload_->portsChanged();
        socketBuffers_->trigger();
    });
}

// gw0's MTU, and with it new pods', follows the narrowest path to a peer
// (Config::gatewayMtu says when); pods made before keep theirs, and doctor's
// mtu check names them.
void Agent::followNarrowestPath(const tunnel::NarrowestPath& path) {
    const int mtu = config_.gatewayMtu(path.mtu);
    if (mtu == gatewayMtu_) return;
    if (mtu < config_.gatewayMtu()) {
        spdlog::warn("gateway: MTU {} for {} and new pods: the path to peer {} has MTU {}, {} bytes below the uplink's {} "
                     "(pods made before keep theirs; recreate them, or set uplink.mtu)",
                     mtu, config_.bridge.gateway, path.peer, path.mtu, config_.uplink.mtu - static_cast<int>(path.mtu),
                     config_.uplink.mtu);
    } else {
        spdlog::info("gateway: MTU {} for {} again: no path to a peer is narrower than the uplink's {}", mtu,
                     config_.bridge.gateway, config_.uplink.mtu);
    }
    gatewayMtu_ = mtu;
    bridges_->setGatewayMtu(mtu);
    gateway_->setMtu(mtu);
}

void Agent::startPeers() {
    peers_ = std::make_unique<PeerFanout>(peerFilterOptions(config_), config_.peers.source != Config::PeerSourceKind::None,
                                          tunnel_.get());
    jobs_.push_back(peers_.get());
    if (tunnel_) peers_->subscribe([this](const peers::PeerSet& p) { tunnel_->setPeers(p); });
    if (flows_) {
        peers_->subscribe([this](const peers::PeerSet& p) {
            flows_->setPeers(flowPeers(p));
            gateway_->setRoutes(gatewayRoutes(config_, &p));
        });
    }
    if (egress_) {
        peers_->subscribe([this](const peers::PeerSet& p) {
            auto n = peerNetworks(p);
            egress_->setPeers(std::move(n.podCidrs), std::move(n.nodes));
            // Not before the peers are known: until then every pod -> peer
            // node connection would be masqueraded.
            egress_->start();
        });
    }
    if (flows_ && config_.enforcesPolicy()) {
        policy_ = std::make_unique<policy::PolicySource>(loop_, kubeCredentials(config_), config_.node.name);
        jobs_.push_back(policy_.get());
        policy_->start([this](const policy::CompiledPolicy& p) { flows_->setPolicy(p); });
        policyLog_ = std::make_unique<flows::PolicyLogger>(loop_, flows::PolicyLogFlows::of(*flows_), policyLogOptions(config_),
                                                           [this](const IpPrefix& a) { return policy_->podAt(a); });
        jobs_.push_back(policyLog_.get());
        policyLog_->start();
    }
    peerSource_ = makePeerSource(loop_, config_);
    if (peerSource_) {
        peers_->setSource(peerSource_.get());
        peerSource_->start([this](const peers::PeerSet& peers, const std::vector<peers::RejectedPeer>& unreadable) {
            peers_->onPeers(peers, unreadable);
        });
    }
}

void Agent::startServers() {
    jobs_.push_back(&cni_);
    statusServer_ = std::make_unique<StatusServer>(loop_, config_.statusSocket,
                                                   controlCommands({[this] { return status(); }, cni_, flows_.get(), policy_.get(), flows_ ? unixctl_.get() : nullptr,
                                                                    config_.node.name, policyLog_.get()}));
    healthServer_ = std::make_unique<HealthServer>(loop_, config_.metricsAddress,
                                                   HealthHandlers{[this] { return readiness(); }, [this] { return metrics(); }});
}

void Agent::start() {
    if (auto missing = missingNodeFamily(config_, linkAddresses); !missing.empty()) throw Error(missing);
    startOvs();
    dropins_ = std::make_unique<gateway::NetworkdDropinGuard>(loop_, config_.gateway.networkdDropinDir,
                                                              networkdDropinInterfaces(config_), repairs_, config_.resync);
    dropins_->start();  // before any device kovs makes exists
    jobs_.push_back(dropins_.get());
    startBridges();
    migrateUplink();
    startJobs();
    startPeers();
    if (flows_) flows_->start();
    if (egress_ && config_.peers.source == Config::PeerSourceKind::None) egress_->start();
    socketBuffers_->start();
    startServers();
    spdlog::info("kovs-agent running on node {} ({} mode, pod CIDRs {}, gateway {})", config_.node.name,
                 standalone(config_) ? "standalone" : "companion", joinPrefixes(config_.node.podCIDRs),
                 config_.bridge.gateway);
}

bool Agent::runOnce() {
    start();
    gateway_->reconcileNow();
    if (tunnel_) tunnel_->reconcileOnce(std::chrono::seconds(15));
    auto why = readiness();
    if (!why.empty()) spdlog::error("not converged: {}", why);
    return why.empty();
}

}  // namespace kovs::agent
