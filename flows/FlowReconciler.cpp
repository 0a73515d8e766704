#include "flows/FlowReconciler.hpp"

#include <algorithm>
#include <functional>
#include <tuple>

#include <spdlog/spdlog.h>

#include "base/Error.hpp"
#include "ovs/OvsdbTransaction.hpp"
#include "ovs/PodPortIds.hpp"

namespace kovs::flows {
namespace {

// A monitor update that leaves the table as it was still earns a read-back,
// shortly: a restarted vswitchd reports its ports one update at a time.
constexpr std::chrono::milliseconds kVerifyDelay{100};

std::optional<int> ofportOf(const nlohmann::json& row) {
    auto v = ovsdb::setElements(row.value("ofport", nlohmann::json()));
    if (v.empty() || !v[0].is_number_integer() || v[0].get<int64_t>() <= 0) return std::nullopt;
    return static_cast<int>(v[0].get<int64_t>());
}

}  // namespace

FlowInputs flowInputs(const FlowReconcilerOptions& opts, const ovs::OvsdbReplica& replica, std::vector<FlowPeer> peers,
                      const policy::CompiledPolicy* policy) {
    FlowInputs in;
    if (policy) in.policy = *policy;
    in.gatewayAddresses = opts.gatewayAddresses;
    in.peers = std::move(peers);
    in.serviceReplyPath = opts.serviceReplyPath;
    in.serviceCIDRs = opts.serviceCIDRs;
    // Only br-int's interfaces: an ofport means nothing on another bridge.
    std::set<std::string> onBridge;
    for (const auto& [_, br] : replica.table("Bridge")) {
        if (ovsdb::stringOr(br, "name") != opts.bridge) continue;
        for (const auto& pu : ovsdb::uuidSet(br.value("ports", nlohmann::json()))) {
            const auto* port = replica.row("Port", pu);
            if (!port) continue;
            for (const auto& iu : ovsdb::uuidSet(port->value("interfaces", nlohmann::json()))) onBridge.insert(iu);
        }
    }
    for (const auto& [uuid, row] : replica.table("Interface")) {
        if (!onBridge.count(uuid)) continue;
        auto name = ovsdb::stringOr(row, "name");
        auto ofport = ofportOf(row);
        if (name == opts.tunnelPort && ofport) in.tunnelOfport = *ofport;
        if (name == opts.gatewayPort && ofport) {
            in.gateway.ofport = *ofport;
            auto mac = ovsdb::setElements(row.value("mac_in_use", nlohmann::json()));
            if (!mac.empty() && mac[0].is_string()) in.gateway.mac = mac[0];
        }
        // Pods are the rows kovs-cni wrote; the render checks each, and names a
        // pod it leaves out (no ofport yet, a bad or contested field).
        auto ids = ovs::PodPortIds::parse(ovsdb::mapValue(row.value("external_ids", nlohmann::json())));
        if (!ids.madeByKovsCni() || ids.mac.empty() || ids.ipAddresses.empty()) continue;
        in.pods.push_back({name, ids.mac, ids.addresses(), ofport.value_or(-1),
                           ids.podName.empty() ? "" : ids.podNamespace + "/" + ids.podName});
    }
    return in;
}

FlowReconciler::FlowReconciler(EventLoop& loop, const ovs::OvsdbReplica& replica, RepairLog& repairs, FlowReconcilerOptions opts)
    : loop_(loop), replica_(replica), repairs_(repairs), opts_(std::move(opts)), bridge_(loop, opts_.bridge, opts_.rundir, opts_.ofctlTimeout),
      engine_(loop, {.job = "flows", .resync = opts_.readBack}, [this](bool full, Done done) { pass(full, std::move(done)); }) {}

FlowReconciler::~FlowReconciler() {
    for (auto& [_, w] : waiters_) loop_.cancel(w.timer);
}

void FlowReconciler::start() {
    if (starting_ || engine_.started()) return;
    starting_ = true;
    // vswitchd keeps the table across an agent restart: which pod holds a
    // contested address is read back from it before the first render.
    bridge_.dumpFlows([this](std::optional<FlowDump> dump, const std::string&) {
        try {
            if (dump) holders_ = FlowTable::holdersIn(*dump, flowInputs(opts_, replica_, peers_).pods);
        } catch (const std::exception& e) {
            spdlog::warn("flows: cannot read the pods' addresses back from {}: {}", opts_.bridge, e.what());
        }
        engine_.start();
    });
}

FlowInputs FlowReconciler::currentInputs() const {
    auto in = flowInputs(opts_, replica_, peers_, policy_ ? &*policy_ : nullptr);
    in.policyLogging = logging_;
    return in;
}

void FlowReconciler::setPolicyLogging(PolicyLogging logging) {
    if (logging == logging_) return;
    // Another generation is another OpenFlow connection, maybe to a
    // vswitchd that restarted with no table: the logging flows' difference
    // alone installed there would leave it holding just them (and the
    // read-back after it would take that for the table installed).
    if (logging.generation != logging_.generation) replaceWhole_ = true;
    logging_ = logging;
    inputChanged();
}

void FlowReconciler::inputChanged() {
    ++inputChanges_;
    engine_.trigger();
}

void FlowReconciler::setPeers(std::vector<FlowPeer> peers) {
    peers_ = std::move(peers);
    peersKnown_ = true;
    inputChanged();
}

void FlowReconciler::setPolicy(policy::CompiledPolicy policy) {
    policy_ = std::move(policy);
    inputChanged();
}

void FlowReconciler::onDatabaseChange() { inputChanged(); }

void FlowReconciler::verifySoon() { engine_.requestFull(kVerifyDelay); }

// Whatever throws here (a render refusing its inputs, ovs-ofctl that cannot
// be started) is a failed pass to the engine: retried with backoff.
void FlowReconciler::pass(bool full, Done done) {
    if (!waitingFor().empty()) return done(ReconcileEngine::Result::ok());  // notReady() says so
    renderedInputs_ = inputChanges_;
    auto in = currentInputs();
    in.holders = holders_;
    auto rendered = FlowTable::render(in);
    holders_ = std::move(rendered.holders);
    if (in.policyLogging.on()) {
        std::vector<std::pair<IpPrefix, int>> podPorts;
        for (const auto& pod : in.pods) {
            for (const auto& a : pod.addresses) {
                try {
                    podPorts.emplace_back(IpPrefix::parse(a).host(), pod.ofport);
                } catch (const Error&) {
                    // A bad address: the render left that pod out and said so.
                }
            }
        }
        decisions_ = std::make_shared<const std::map<uint64_t, LoggedDecision>>(flows::loggedDecisions(in.policy, podPorts));
    } else if (!decisions_->empty()) {
        decisions_ = std::make_shared<const std::map<uint64_t, LoggedDecision>>();
    }
    if (installed_ && *installed_ == rendered.flows) {
        desired_ = installed_;
    } else {
        desired_ = std::make_shared<const std::vector<Flow>>(std::move(rendered.flows));
    }
    desiredPorts_ = std::move(rendered.ports);
    skipped_ = std::move(rendered.skipped);
    if (skipped_ != skippedLogged_) {
        for (const auto& why : skipped_) spdlog::warn("flows: a pod left out of the table: {}", why);
        skippedLogged_ = skipped_;
    }
    if (desired_ != installed_) return install(std::move(done));  // the same table is the same pointer
    if (!full) {
        done(ReconcileEngine::Result::ok());
        return verifySoon();
    }
    bridge_.dumpFlows([this, done = std::move(done)](std::optional<FlowDump> dump, const std::string& error) {
        if (!dump) return done(failed(error));
        countDrops(*dump);
        if (std::hash<std::string>{}(dump->flows) == expectedDump_) return done(ReconcileEngine::Result::ok());
        ++readBackRepairs_;
        repairs_.record("flows", fmt::format("{} held {} flows that differ from the {} installed: reinstalled", opts_.bridge,
                                             dump->count, expectedCount_));
        spdlog::warn("flows: {} differs from the table installed ({} flows read back); reinstalling", opts_.bridge, dump->count);
        installed_.reset();  // not what the bridge holds: replaced whole
        try {
            install(done);
        } catch (const std::exception& e) {
            done(failed(e.what()));
        }
    });
}

// Only the difference to the table installed last (a pod, a peer or a policy
// changed: a few flows of thousands), or the whole table where the bridge's
// may be another (first install, after a failure or a read-back that differed).
void FlowReconciler::install(Done done) {
    auto table = desired_;
    auto ports = desiredPorts_;
    auto mods = installed_ && !replaceWhole_ ? flowModsBetween(*installed_, *table) : std::nullopt;
    replaceWhole_ = false;
    auto installedThen = [this, table, ports, done](const std::string& error) {
        if (!error.empty()) return done(failed(error));
        installed_ = table;
        lastInstall_ = std::chrono::system_clock::now();
        installedPorts_ = ports;
        bridge_.dumpFlows([this, done](std::optional<FlowDump> dump, const std::string& error) {
            if (!dump) return done(failed(error));
            countDrops(*dump);
            expectedDump_ = std::hash<std::string>{}(dump->flows);
            expectedCount_ = dump->count;
            ++installs_;
            spdlog::info("flows: installed {} flows on {}", dump->count, opts_.bridge);
            notifyWaiters();
            done(ReconcileEngine::Result::ok());
        });
    };
    try {
        if (mods) bridge_.modifyFlows(*mods, std::move(installedThen));
        else bridge_.replaceFlows(flowText(*table), std::move(installedThen));
    } catch (...) {
        failed("");
        throw;
    }
}

// Whatever the bridge holds now, the next pass installs it whole.
ReconcileEngine::Result FlowReconciler::failed(const std::string& why) {
    installed_.reset();
    installedPorts_.clear();
    return ReconcileEngine::Result::failed(why);
}

void FlowReconciler::whenPortReady(const std::string& port, std::chrono::milliseconds timeout, PortReady done) {
    if (installedPorts_.count(port)) return done(true, "");
    auto id = nextWaiter_++;
    auto timer = loop_.after(timeout, [this, id, timeout] {
        auto node = waiters_.extract(id);
        if (node.empty()) return;
        auto& w = node.mapped();
        std::string why = "flows for " + w.port + " not installed within " + std::to_string(timeout.count()) + " ms";
        if (auto error = engine_.lastError(); !error.empty()) why += ": " + error;
        w.done(false, why);
    });
    waiters_.emplace(id, Waiter{port, timer, std::move(done)});
}

void FlowReconciler::notifyWaiters() {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (!installedPorts_.count(it->second.port)) {
            ++it;
            continue;
        }
        auto w = std::move(it->second);
        it = waiters_.erase(it);
        loop_.cancel(w.timer);
        w.done(true, "");
    }
}

void FlowReconciler::countDrops(const FlowDump& dump) {
    for (auto& c : drops_) {
        uint64_t now = 0;  // a kind of drop may be many flows: the policy stage's, one per address
        for (const auto& [cookie, packets] : dump.packetsByCookie)
            if ((cookie & kCookieLowBits) == c.cookie) now += packets;
        if (now < c.last) c.base += c.last;  // the flows were re-created
        c.last = now;
    }
    dropsAt_.clear();
    for (const auto& [cookie, packets] : dump.packetsByCookie) {
        if (auto drop = policyDropOf(cookie)) dropsAt_[{drop->ingress, drop->ofport}] += packets;
    }
    rulePackets_.clear();
    for (auto it = dump.packetsByCookie.upper_bound(kCookiePolicyRule); it != dump.packetsByCookie.end() &&
                                                                          it->first - kCookiePolicyRule <= 0xffffffffu;
         ++it)
        rulePackets_.insert(*it);
}

std::map<int, std::vector<IpPrefix>> FlowReconciler::podAddressesByPort() const {
    std::map<int, std::vector<IpPrefix>> out;
    for (const auto& pod : flowInputs(opts_, replica_, {}).pods) {
        if (pod.ofport <= 0) continue;
        for (const auto& text : pod.addresses) {
            try {
                out[pod.ofport].push_back(IpPrefix::parse(text).host());
            } catch (const std::exception&) {
                // A bad address: the render leaves that pod out and says so.
            }
        }
    }
    return out;
}

FlowReconciler::PolicyCounts FlowReconciler::policyCounts(const std::vector<IpPrefix>& podAddresses) const {
    PolicyCounts out;
    for (const auto& [ofport, hosts] : podAddressesByPort()) {
        bool its = std::any_of(hosts.begin(), hosts.end(), [&](const IpPrefix& h) {
            return std::find(podAddresses.begin(), podAddresses.end(), h) != podAddresses.end();
        });
        if (!its) continue;
        if (auto it = dropsAt_.find({true, ofport}); it != dropsAt_.end()) out.droppedIngress += it->second;
        if (auto it = dropsAt_.find({false, ofport}); it != dropsAt_.end()) out.droppedEgress += it->second;
    }
    if (!policy_) return out;
    auto count = [&](uint32_t id, const std::vector<IpPrefix>& appliedTo) {
        bool applies = std::any_of(appliedTo.begin(), appliedTo.end(), [&](const IpPrefix& a) {
            return std::find(podAddresses.begin(), podAddresses.end(), a) != podAddresses.end();
        });
        auto it = rulePackets_.find(kCookiePolicyRule + id);
        if (applies) out.rulePackets[id] = it == rulePackets_.end() ? 0 : it->second;
    };
    for (const auto& r : policy_->rules) count(r.id, r.appliedTo);
    for (const auto& r : policy_->admin) count(r.id, policy_->adminSets[r.subjects].addresses);
    return out;
}

std::string FlowReconciler::waitingFor() const {
    if (opts_.waitForPeers && !peersKnown_) return "the peer list";
    if (opts_.waitForPolicy && !policy_) return "NetworkPolicy";
    return "";
}

std::string FlowReconciler::notReady() const {
    if (auto w = waitingFor(); !w.empty()) return "flows: waiting for " + w + " (the table waits for the first list)";
    auto error = engine_.lastError();
    return error.empty() ? "" : "flows: " + error;
}

void FlowReconciler::status(nlohmann::json& out) const {
    out["flows"] = {{"bridge", opts_.bridge},
                    {"installs", installs_},
                    {"readBackRepairs", readBackRepairs_},
                    {"error", engine_.lastError()},
                    {"podsLeftOut", skipped_},
                    {"serviceReplyPath", opts_.serviceReplyPath},
                    {"policyStage", policy_ && policy_->active()},
                    // Every input change is rendered, and that table is the one on the bridge.
                    {"upToDate", renderedInputs_ == inputChanges_ && !desired_->empty() && desired_ == installed_},
                    // When the last table change took effect (wall clock, ms): what the
                    // policy benchmark times an API change against.
                    {"lastInstallUnixMs",
                     std::chrono::duration_cast<std::chrono::milliseconds>(lastInstall_.time_since_epoch()).count()},
                    {"dropped", nlohmann::json::object()}};
    for (const auto& c : drops_) out["flows"]["dropped"][c.statusKey] = c.total();
    engine_.status(out["flows"]);
}

void FlowReconciler::metrics(MetricsText& out) const {
    out.counter("kovs_flow_installs_total", "Flow table installs (replace-flows bundles).", static_cast<double>(installs_));
    out.counter("kovs_flow_readback_repairs_total", "Reinstalls because the bridge held another table than the one installed.",
                static_cast<double>(readBackRepairs_));
    const char* help = "Packets dropped by br-int's ingress checks (pods, tunnel), by reason.";
    for (const auto& c : drops_) out.counter("kovs_flow_drops_total", help, static_cast<double>(c.total()), {{"reason", c.reason}});
    engine_.metrics(out);
    if (!policy_) return;
    // One policy rule may be realized as several conjunctions (a named port
    // resolved to different numbers on different pods): summed.
    std::map<std::tuple<std::string, bool, int>, uint64_t> perRule;
    for (const auto& r : policy_->rules) {
        auto it = rulePackets_.find(kCookiePolicyRule + r.id);
        perRule[{r.policy, r.ingress, r.rule}] += it == rulePackets_.end() ? 0 : it->second;
    }
    for (const auto& [rule, packets] : perRule) {
        const auto& [policy, ingress, index] = rule;
        out.gauge("kovs_policy_rule_packets",
                  "Packets a NetworkPolicy rule allowed on this node since its flows were installed (first packets of new "
                  "connections; as of the last read-back of the table).",
                  static_cast<double>(packets), {{"policy", policy}, {"direction", ingress ? "ingress" : "egress"}, {"rule", std::to_string(index)}});
    }
    // An admin rule's packets: what it decided (Allow, Deny or Pass), per rule name.
    std::map<std::tuple<std::string, std::string, bool, std::string>, uint64_t> perAdminRule;
    for (const auto& r : policy_->admin) {
        auto it = rulePackets_.find(kCookiePolicyRule + r.id);
        const char* tier = r.tier == policy::Tier::Admin ? "AdminNetworkPolicy" : "BaselineAdminNetworkPolicy";
        perAdminRule[{tier, r.policy, r.ingress, r.rule}] += it == rulePackets_.end() ? 0 : it->second;
    }
    for (const auto& [rule, packets] : perAdminRule) {
        const auto& [tier, policy, ingress, name] = rule;
        out.gauge("kovs_policy_admin_rule_packets",
                  "Packets an AdminNetworkPolicy or BaselineAdminNetworkPolicy rule decided on this node (its action: Allow, Deny or "
                  "Pass; first packets of new connections; as of the last read-back of the table).",
                  static_cast<double>(packets),
                  {{"tier", tier}, {"policy", policy}, {"direction", ingress ? "ingress" : "egress"}, {"rule", name}});
    }
    // A drop at a pod isolated by several policies counts for each of them.
    std::map<std::pair<std::string, bool>, uint64_t> perPolicy;
    const auto pods = podAddressesByPort();
    for (const auto& [at, packets] : dropsAt_) {
        const auto& [ingress, ofport] = at;
        auto hosts = pods.find(ofport);
        if (hosts == pods.end()) continue;
        for (const auto& p : policy::isolatingPolicies(*policy_, ingress, hosts->second)) perPolicy[{p, ingress}] += packets;
    }
    for (const auto& [key, packets] : perPolicy) {
        out.gauge("kovs_policy_dropped_packets",
                  "Packets dropped at this node's pods a NetworkPolicy isolates, no rule allowing them (first packets of new "
                  "connections; a pod isolated by several policies counts for each; as of the last read-back of the table).",
                  static_cast<double>(packets), {{"policy", key.first}, {"direction", key.second ? "ingress" : "egress"}});
    }
}

}  // namespace kovs::flows
