#include "agent/Agent.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <functional>
#include <net/if.h>
#include <set>
#include <sstream>

#include "gateway/NetworkdDropins.hpp"
#include "agent/NetworkdInterfaces.hpp"
#include "ovs/PacketSocketBuffers.hpp"
#include "peers/FilePeerSource.hpp"
#include "peers/kube/KubeConfig.hpp"
#include "peers/KubernetesPeerSource.hpp"

namespace kovs {
namespace {

constexpr size_t kRecentRepairs = 20;

std::optional<int64_t> ofportOf(const nlohmann::json& row) {
    auto v = ovsdb::setElements(row.value("ofport", nlohmann::json()));
    if (v.empty() || !v[0].is_number_integer() || v[0].get<int64_t>() <= 0) return std::nullopt;
    return v[0].get<int64_t>();
}

std::string nowText() {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

}  // namespace

Agent::Agent(EventLoop& loop, Config config) : loop_(loop), config_(std::move(config)) { resolveUplinkMtu(config_); }

Agent::~Agent() {
    if (peerSource_) peerSource_->stop();
    if (tunnel_) tunnel_->stop();
}

BridgeOptions Agent::bridgeOptions() const {
    BridgeOptions o;
    o.integrationBridge = config_.bridge.integration;
    o.physBridge = config_.uplink.mode == Config::UplinkMode::None ? "" : config_.bridge.physical;
    o.gatewayPort = config_.bridge.gateway;
    o.tunnelPort = config_.bridge.tunnel;
    o.tunnelDstPort = config_.bridge.tunnelDstPort;
    // Standalone: only kovs's flows forward on br-int. Companion: the other CNI owns br-int's mode.
    if (standalone()) o.failMode = "secure";
    return o;
}

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
    // Peer pod-CIDR routes join once the peers are known (onPeers).
    o.routesComplete = !standalone() || config_.peers.source == Config::PeerSourceKind::None || peersKnown_;
    o.resyncInterval = config_.gateway.resync;
    return o;
}

tunnel::UplinkOptions Agent::uplinkOptions() const {
    tunnel::UplinkOptions o;
    o.mode = config_.uplink.mode == Config::UplinkMode::Direct ? tunnel::UplinkMode::Direct : tunnel::UplinkMode::Shim;
    o.device = config_.uplink.interface;
    o.bridge = config_.bridge.physical;
    o.portType = config_.uplink.portType;
    // Next to the OVS sockets: per node, and kept across agent restarts.
    o.stateFile = config_.ovs.rundir + "/kovs-uplink.json";
    o.ovsdb = config_.ovsdbRemote();
    return o;
}

void Agent::recordRepair(const std::string& kind, const std::string& detail) {
    ++repairs_[kind];
    recentRepairs_.push_front({nowText(), kind, detail});
    if (recentRepairs_.size() > kRecentRepairs) recentRepairs_.pop_back();
}

void Agent::startOvs() {
    if (config_.ovs.manage) {
        OvsSupervisorOptions o;
        o.rundir = config_.ovs.rundir;
        o.dbPath = config_.ovs.dbPath;
        o.schemaPath = config_.ovs.schema;
        o.keepRunningOnExit = true;  // an agent restart must not take the datapath down
        supervisor_ = std::make_unique<OvsSupervisor>(loop_, o);
        supervisor_->setRestartHandler([this](OvsSupervisor::Daemon d, pid_t pid) {
            recordRepair("ovs-restart", fmt::format("{} restarted as pid {}", toString(d), pid));
            // Bridges live in the database; routes, neighbours and flows lived
            // in the dead vswitchd. The tunnel reconciler sees the new pid
            // itself; flows are re-installed once the new ofports are known.
            if (d == OvsSupervisor::Daemon::Vswitchd) reconcileFlows(true);
        });
        supervisor_->start();
    }
    OvsdbClientOptions o;
    o.remote = config_.ovsdbRemote();
    ovsdb_ = std::make_unique<OvsdbClient>(loop_, o);
    ovsdb_->start();
    if (!ovsdb_->waitReady(std::chrono::seconds(15))) throw Error("ovsdb " + o.remote + ": not reachable within 15 s");
}

void Agent::convergeBridges() {
    bridges_ = std::make_unique<BridgeReconciler>(loop_, *ovsdb_, bridgeOptions());
    bridges_->setAppliedHandler([this](const BridgePlan& plan) {
        for (const auto& c : plan.changes) recordRepair("ovsdb", c);
    });
    bridges_->start();
    if (!bridges_->reconcileOnce(std::chrono::seconds(30)))
        throw Error("bridges did not converge within 30 s: " + bridges_->lastError());
    ovsdb_->addChangeHandler([this] {
        reconcileFlows(false);
        sizeSocketBuffers();
    });
}

// OVSDB holding a bridge does not mean ovs-vswitchd has made its device yet.
void Agent::waitForDevice(const std::string& name, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (::if_nametoindex(name.c_str()) == 0) {
        if (std::chrono::steady_clock::now() >= deadline)
            throw Error(fmt::format("{}: ovs-vswitchd did not create the device within {} ms", name, timeout.count()));
        loop_.runUntil([] { return false; }, std::chrono::milliseconds(10));  // the loop keeps serving meanwhile
    }
}

void Agent::migrateUplink() {
    if (config_.uplink.mode == Config::UplinkMode::None) return;
    waitForDevice(config_.bridge.physical, std::chrono::seconds(15));
    tunnel::Uplink uplink(uplinkOptions());
    auto outcome = uplink.migrate();
    if (outcome == tunnel::Uplink::Outcome::Migrated) {
        recordRepair("uplink", config_.uplink.interface + " moved to " + config_.bridge.physical + " (" +
                                   tunnel::Uplink::modeName(uplinkOptions().mode) + ")");
    }
    spdlog::info("uplink: {} {} on {}", config_.uplink.interface,
                 outcome == tunnel::Uplink::Outcome::Migrated ? "migrated" : "already migrated", config_.bridge.physical);
}

void Agent::startOffload() {
    std::vector<std::string> devices{config_.bridge.gateway};
    if (config_.uplink.mode != Config::UplinkMode::None) devices.push_back(config_.bridge.physical);
    if (config_.uplink.mode == Config::UplinkMode::Shim) devices.push_back(uplinkOptions().shimVethBridgeEnd);
    offload_ = std::make_unique<offload::OffloadGuard>(devices, [this] {
        return offload::podInterfacesFromReplica(ovsdb_->replica(), config_.bridge.integration);
    });
    // Start-up sweep: pods created while the agent was down, taps re-created by a vswitchd restart.
    if (auto n = offload_->sweep()) recordRepair("offload", fmt::format("TX checksum turned off on {} device(s) at start-up", n));
    offload_->attach(loop_, config_.resync);
}

void Agent::startGateway() {
    gateway_.emplace(loop_, gatewayOptions());
    gateway_->setRestoreHandler([this](std::chrono::nanoseconds took) {
        gatewayRestoreLatency_.observe(took);
        recordRepair("gateway", fmt::format("{} restored in {} us", config_.bridge.gateway, took.count() / 1000));
    });
}

void Agent::startTunnel() {
    if (config_.uplink.mode == Config::UplinkMode::None) return;
    unixctl_ = std::make_unique<UnixctlClient>(config_.ovs.rundir);
    neighbours_ = std::make_unique<tunnel::KernelNeighbourTable>();
    tunnel::TunnelReconcilerOptions o;
    o.bridge = config_.bridge.physical;
    o.resync = config_.resync;
    tunnel_ = std::make_unique<tunnel::TunnelReconciler>(loop_, *unixctl_, *neighbours_, o);
    tunnel_->start();
}

void Agent::startPeers() {
    switch (config_.peers.source) {
        case Config::PeerSourceKind::None:
            return;
        case Config::PeerSourceKind::File:
            peerSource_ = std::make_unique<tunnel::FilePeerSource>(loop_, config_.peers.file);
            break;
        case Config::PeerSourceKind::Kubernetes: {
            auto creds = config_.peers.kubeconfig.empty() ? tunnel::inClusterCredentials()
                                                          : tunnel::kubeconfigCredentials(config_.peers.kubeconfig);
            tunnel::KubernetesPeerSourceOptions o;
            o.nodeName = config_.node.name;
            peerSource_ = std::make_unique<tunnel::KubernetesPeerSource>(loop_, std::move(creds), o);
            break;
        }
    }
    peerSource_->start([this](const tunnel::PeerSet& peers) { onPeers(peers); });
}

namespace {
// Flows and gw0 routes are IPv4 only for now (docs/architecture.md): a peer
// reached over an IPv6 node address gets neither.
bool ipv4Underlay(const tunnel::Peer& p) { return p.nodeIP.find(':') == std::string::npos; }
}  // namespace

void Agent::onPeers(const tunnel::PeerSet& all) {
    tunnel::PeerSet peers;
    for (const auto& [name, p] : all) {
        if (name != config_.node.name) peers.emplace(name, p);
    }
    spdlog::info("peers: {} node(s)", peers.size());
    peers_ = std::move(peers);
    peersKnown_ = true;
    if (tunnel_) tunnel_->setPeers(peers_);
    if (gateway_ && standalone()) {
        // The node kernel reaches remote pods through gw0; the flow table
        // answers its ARP and tunnels the packets.
        auto opts = gatewayOptions();
        for (const auto& [_, p] : peers_) {
            if (!ipv4Underlay(p)) continue;  // no flows for it either: a route would only blackhole
            for (const auto& cidr : p.podCIDRs) {
                auto prefix = IpPrefix::parse(cidr);
                if (prefix.family == AF_INET) opts.routes.push_back({prefix.network(), std::nullopt});
            }
        }
        gateway_->setRoutes(opts.routes);
    }
    reconcileFlows(false);
}

void Agent::reconcileFlows(bool force) {
    if (!standalone() || !flows_ || !ovsdb_) return;
    FlowInputs in;
    const auto& ifaces = ovsdb_->replica().table("Interface");
    auto gwAddr = gatewayOptions().addresses;
    for (const auto& [uuid, row] : ifaces) {
        auto name = ovsdb::stringOr(row, "name");
        auto ofport = ofportOf(row);
        if (name == config_.bridge.tunnel && ofport) in.tunnelOfport = static_cast<int>(*ofport);
        if (name == config_.bridge.gateway && ofport) {
            in.gateway.ofport = static_cast<int>(*ofport);
            auto mac = ovsdb::setElements(row.value("mac_in_use", nlohmann::json()));
            if (!mac.empty() && mac[0].is_string()) in.gateway.mac = mac[0];
        }
        auto ids = ovsdb::mapValue(row.value("external_ids", nlohmann::json()));
        if (ids.count("attached-mac") && ids.count("ip-address") && ofport) {
            std::stringstream list(ids["ip-address"]);
            for (std::string cidr; std::getline(list, cidr, ',');) {
                if (cidr.find(':') == std::string::npos)
                    in.pods.push_back({cidr.substr(0, cidr.find('/')), ids["attached-mac"], static_cast<int>(*ofport)});
            }
        }
    }
    for (const auto& a : gwAddr) {
        if (a.family == AF_INET) in.localCidr = a.network().str();
    }
    for (const auto& [_, p] : peers_) {
        if (!ipv4Underlay(p)) continue;
        for (const auto& cidr : p.podCIDRs) {
            if (cidr.find(':') == std::string::npos) in.remotes.push_back({cidr, p.nodeIP});
        }
    }
    try {
        if (flows_->install(in, force)) {
            ++flowInstalls_;
            spdlog::info("flows: installed {} flows on {}", std::count(flows_->installed().begin(), flows_->installed().end(), '\n'),
                         config_.bridge.integration);
        }
        flowError_.clear();
        flowRetry_.succeeded();
        if (flows_->skipped() != flowSkippedLogged_) {
            for (const auto& why : flows_->skipped()) spdlog::warn("flows: a pod left out of the table: {}", why);
            flowSkippedLogged_ = flows_->skipped();
        }
    } catch (const std::exception& e) {
        // Typically ports without an ofport yet right after a vswitchd
        // restart: the next monitor update, the resync or the retry fixes it.
        if (flowError_ != e.what()) spdlog::warn("flows: {}", e.what());
        flowError_ = e.what();
        if (force) flowRetry_.schedule();
    }
}

// vswitchd opens a socket at the kernel's default size for every port it
// adds and after a restart; already-sized sockets are left alone.
void Agent::sizeSocketBuffers() {
    if (config_.ovs.socketBufferKiB == 0) return;
    try {
        pid_t pid = vswitchdPid(config_.ovs.rundir);
        auto r = sizePacketSocketBuffers(pid, config_.ovs.socketBufferKiB * 1024);
        if (r.resized > 0)
            spdlog::info("ovs-vswitchd (pid {}): {} of {} packet socket(s) given {} KiB buffers", pid, r.resized,
                         r.sockets, config_.ovs.socketBufferKiB);
        socketBufferResizes_ += static_cast<uint64_t>(r.resized);
        socketBufferError_.clear();
    } catch (const std::exception& e) {  // also filesystem_error from walking /proc/PID/fd
        // Throughput suffers, nothing breaks: say so once, not every resync.
        if (socketBufferError_ != e.what())
            spdlog::warn("ovs-vswitchd socket buffers left at the kernel default: {}", e.what());
        socketBufferError_ = e.what();
    }
}

void Agent::resync() {
    if (bridges_) bridges_->trigger();
    reconcileFlows(true);
    sizeSocketBuffers();
    loop_.after(config_.resync, [this] { resync(); });
}

void Agent::start() {
    startOvs();
    // Before any device kovs makes exists: a networkd that (re)loads its
    // configuration meanwhile must already find them marked unmanaged.
    NetworkdDropins(config_.gateway.networkdDropinDir).install(networkdDropinInterfaces(config_));
    convergeBridges();
    migrateUplink();
    startGateway();
    startOffload();
    startTunnel();
    if (standalone()) flows_ = std::make_unique<FlowTable>(config_.bridge.integration, config_.ovs.rundir);
    startPeers();
    reconcileFlows(true);
    sizeSocketBuffers();
    statusServer_ = std::make_unique<StatusServer>(loop_, config_.statusSocket, [this](const nlohmann::json& req) {
        auto cmd = req.value("command", "");
        if (cmd == "status") return status();
        if (cmd == "cni-report") {
            cniStats_.record(req);
            return nlohmann::json{{"ok", true}};
        }
        throw Error("unknown command '" + cmd + "' (known: status, cni-report)");
    });
    healthServer_ = std::make_unique<HealthServer>(loop_, config_.metricsAddress,
                                                   HealthHandlers{[this] { return readiness(); }, [this] { return metrics(); }});
    loop_.after(config_.resync, [this] { resync(); });
    spdlog::info("kovs-agent running on node {} ({} mode, pod CIDR {}, gateway {})", config_.node.name,
                 standalone() ? "standalone" : "companion", config_.node.podCIDR, config_.bridge.gateway);
}

bool Agent::runOnce() {
    start();
    gateway_->reconcileNow();
    if (tunnel_) tunnel_->reconcile();
    bool ok = bridges_->converged() && readiness().empty();
    if (!ok) spdlog::error("not converged: {}", readiness());
    return ok;
}

void Agent::cleanup() {
    NetworkdDropins(config_.gateway.networkdDropinDir).remove(networkdDropinInterfaces(config_));
    if (config_.uplink.mode != Config::UplinkMode::None && tunnel::Uplink(uplinkOptions()).cleanup())
        spdlog::info("uplink: original addressing of {} restored", config_.uplink.interface);
    OvsdbClientOptions o;
    o.remote = config_.ovsdbRemote();
    ovsdb_ = std::make_unique<OvsdbClient>(loop_, o);
    ovsdb_->start();
    if (ovsdb_->waitReady(std::chrono::seconds(5))) {
        BridgeReconciler(loop_, *ovsdb_, bridgeOptions()).cleanup();
    } else {
        spdlog::warn("ovsdb {} not reachable: OVS rows left as they are", o.remote);
    }
    spdlog::info("kovs-agent cleanup done");
}

std::string Agent::readiness() const {
    if (!ovsdb_ || ovsdb_->state() != OvsdbClient::State::Ready) return "OVSDB not connected";
    if (!bridges_ || !bridges_->converged()) return "bridges not converged: " + (bridges_ ? bridges_->lastError() : "");
    if (gateway_ && config_.gateway.guard && !gateway_->stats().linkPresent) return config_.bridge.gateway + " missing";
    if (config_.peers.source != Config::PeerSourceKind::None && !peersKnown_) return "peer list not received yet";
    if (!flowError_.empty()) return "flows: " + flowError_;
    return "";
}

nlohmann::json Agent::status() const {
    using nlohmann::json;
    json s;
    s["node"] = config_.node.name;
    s["mode"] = standalone() ? "standalone" : "companion";
    s["uptimeSeconds"] = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - startedAt_).count();
    s["ready"] = readiness().empty();
    s["notReadyReason"] = readiness();
    if (ovsdb_) {
        s["ovsdb"] = {{"state", toString(ovsdb_->state())}, {"reconnects", ovsdb_->reconnects()},
                      {"transactions", ovsdb_->transactionsSent()}};
        json bridges = json::array();
        const auto& replica = ovsdb_->replica();
        for (const auto& [uuid, br] : replica.table("Bridge")) {
            json ports = json::array();
            for (const auto& pu : ovsdb::uuidSet(br.value("ports", json()))) {
                if (const auto* p = replica.row("Port", pu)) ports.push_back(ovsdb::stringOr(*p, "name"));
            }
            bridges.push_back({{"name", ovsdb::stringOr(br, "name")}, {"datapathType", ovsdb::stringOr(br, "datapath_type")},
                               {"ports", ports}});
        }
        s["bridges"] = bridges;
    }
    if (supervisor_) {
        s["vswitchd"] = {{"pid", supervisor_->pid(OvsSupervisor::Daemon::Vswitchd)},
                         {"restarts", supervisor_->restarts(OvsSupervisor::Daemon::Vswitchd)}};
    }
    if (gateway_) {
        auto g = gateway_->stats();
        json addrs = json::array();
        for (const auto& a : gatewayOptions().addresses) addrs.push_back(a.str());
        s["gateway"] = {{"name", config_.bridge.gateway}, {"present", g.linkPresent}, {"addresses", addrs},
                        {"restores", g.restores}, {"lastRestoreMicros", g.lastRestore.count() / 1000}};
    }
    if (offload_) {
        const auto& o = offload_->stats();
        s["offload"] = {{"checked", o.checks}, {"repaired", o.repairs}, {"hostVethsIsolated", o.hostVethRepairs},
                        {"errors", o.errors}, {"lastError", o.lastError}};
    }
    json peers = json::array();
    for (const auto& [name, p] : peers_) {
        peers.push_back({{"name", name}, {"nodeIP", p.nodeIP}, {"podCIDRs", p.podCIDRs},
                         {"route", tunnel_ && tunnel_->hasRoute(p.nodeIP)},
                         {"neighbour", tunnel_ && tunnel_->hasNeighbour(p.nodeIP)}});
    }
    s["peers"] = peers;
    if (flows_) s["flows"] = {{"installs", flowInstalls_}, {"error", flowError_}, {"podsLeftOut", flows_->skipped()}};
    if (config_.ovs.socketBufferKiB)
        s["socketBuffers"] = {{"kib", config_.ovs.socketBufferKiB}, {"resized", socketBufferResizes_}, {"error", socketBufferError_}};
    json recent = json::array();
    for (const auto& r : recentRepairs_) recent.push_back({{"time", r.time}, {"kind", r.kind}, {"detail", r.detail}});
    s["recentRepairs"] = recent;
    return s;
}

std::string Agent::metrics() const {
    MetricsText m;
    m.gauge("kovs_up", "1 while the agent runs.", 1);
    m.gauge("kovs_ready", "1 when the node is converged and ready.", readiness().empty() ? 1 : 0);
    m.gauge("kovs_peers", "Peer nodes known.", static_cast<double>(peers_.size()));
    for (const auto& [kind, n] : repairs_) m.counter("kovs_repairs_total", "Repairs made, by kind.", static_cast<double>(n), {{"kind", kind}});
    if (ovsdb_) {
        m.counter("kovs_ovsdb_reconnects_total", "Reconnections to ovsdb-server.", static_cast<double>(ovsdb_->reconnects()));
        m.counter("kovs_ovsdb_transactions_total", "OVSDB transactions sent.", static_cast<double>(ovsdb_->transactionsSent()));
    }
    if (bridges_) m.counter("kovs_reconciles_total", "Reconciler runs that changed something.", static_cast<double>(bridges_->transactions()), {{"reconciler", "bridge"}});
    if (supervisor_) {
        m.counter("kovs_ovs_restarts_total", "OVS daemons restarted by the agent.",
                  static_cast<double>(supervisor_->restarts(OvsSupervisor::Daemon::Vswitchd)), {{"daemon", "ovs-vswitchd"}});
        m.counter("kovs_ovs_restarts_total", "OVS daemons restarted by the agent.",
                  static_cast<double>(supervisor_->restarts(OvsSupervisor::Daemon::OvsdbServer)), {{"daemon", "ovsdb-server"}});
    }
    if (gateway_) {
        auto g = gateway_->stats();
        m.counter("kovs_reconciles_total", "Reconciler runs that changed something.", static_cast<double>(g.restores), {{"reconciler", "gateway"}});
        m.counter("kovs_gateway_repairs_total", "gw0 repairs, by kind.", static_cast<double>(g.addressesAdded), {{"kind", "address"}});
        m.counter("kovs_gateway_repairs_total", "gw0 repairs, by kind.", static_cast<double>(g.routesAdded), {{"kind", "route"}});
        m.counter("kovs_gateway_repairs_total", "gw0 repairs, by kind.", static_cast<double>(g.linkUp), {{"kind", "link_up"}});
        m.counter("kovs_gateway_repairs_total", "gw0 repairs, by kind.", static_cast<double>(g.mtuFixed), {{"kind", "mtu"}});
    }
    gatewayRestoreLatency_.write(m, "kovs_gateway_restore_seconds", "Time from gw0 damage to its repair.");
    if (tunnel_) {
        const auto& t = tunnel_->stats();
        m.counter("kovs_tunnel_commands_total", "unixctl commands sent to program peers.", static_cast<double>(t.commandsSent));
        m.counter("kovs_vswitchd_restarts_seen_total", "ovs-vswitchd restarts seen by the tunnel reconciler.",
                  static_cast<double>(t.vswitchdRestarts));
    }
    if (offload_) {
        const auto& o = offload_->stats();
        const char* help = "Repairs by the offload guard, by kind: TX checksum offload turned off again, a pod veth's host end taken off the node's IP stack.";
        m.counter("kovs_offload_repairs_total", help, static_cast<double>(o.repairs - o.hostVethRepairs), {{"kind", "tx_checksum"}});
        m.counter("kovs_offload_repairs_total", help, static_cast<double>(o.hostVethRepairs), {{"kind", "host_veth"}});
        m.counter("kovs_offload_checks_total", "Offload guard checks (TX checksum and pod veth host ends).", static_cast<double>(o.checks));
    }
    cniStats_.write(m);
    if (flows_) m.counter("kovs_flow_installs_total", "Flow table installs (replace-flows bundles).", static_cast<double>(flowInstalls_));
    m.counter("kovs_vswitchd_socket_resizes_total", "ovs-vswitchd AF_PACKET sockets given larger buffers (ovs.socketBufferKiB).",
              static_cast<double>(socketBufferResizes_));
    return m.str();
}

}  // namespace kovs
