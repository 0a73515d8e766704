#include "bridge/BridgeReconciler.hpp"

#include <algorithm>
#include <optional>

#include "base/Error.hpp"
#include "base/Log.hpp"
#include "base/Strings.hpp"

namespace kovs::bridge {

namespace {
constexpr std::chrono::milliseconds kBackoffMin{100};
constexpr std::chrono::milliseconds kBackoffMax{5000};
// After our own commit, the monitor update that reflects it may trail the
// reply; re-plan then, or after this long if no update comes.
constexpr std::chrono::milliseconds kSettle{500};


}  // namespace

BridgeReconciler::BridgeReconciler(EventLoop& loop, ovs::OvsdbClient& client, BridgeOptions opts,
                                   std::chrono::milliseconds resync)
    : loop_(loop), client_(client), planner_(std::move(opts)),
      engine_(loop, {.job = "bridges", .resync = resync, .retryMin = kBackoffMin, .retryMax = kBackoffMax},
              [this](bool, ReconcileEngine::Done done) { pass(std::move(done)); }) {}

BridgeReconciler::~BridgeReconciler() { *alive_ = false; }

void BridgeReconciler::start() {
    if (started_) return;
    started_ = true;
    auto token = alive_;
    client_.addChangeHandler([this, token] {
        if (!*token) return;
        settlingUntil_.reset();
        trigger();
    });
    client_.addStateHandler([this, token](ovs::OvsdbClient::State s) {
        if (*token && s == ovs::OvsdbClient::State::Ready) trigger();
    });
    client_.start();
    engine_.start();
}

void BridgeReconciler::setGatewayMtu(int mtu) {
    auto o = planner_.options();
    o.gatewayMtu = mtu;
    planner_ = BridgePlanner(std::move(o));
    trigger();
}

bool BridgeReconciler::converged() const {
    return client_.state() == ovs::OvsdbClient::State::Ready && !engine_.passInFlight() &&
           planner_.plan(client_.replica()).txn.empty();
}

void BridgeReconciler::pass(ReconcileEngine::Done done) {
    using Result = ReconcileEngine::Result;
    if (client_.state() != ovs::OvsdbClient::State::Ready) return done(Result::ok());  // the Ready transition triggers us again
    if (settlingUntil_) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(*settlingUntil_ - EventLoop::Clock::now());
        if (left.count() > 0) {
            done(Result::ok());
            return engine_.trigger(left);  // after done(): a trigger during the pass would run at once
        }
        settlingUntil_.reset();
    }
    if (detach(done)) return;
    auto plan = planner_.plan(client_.replica());
    auto foreign = join(plan.foreign, "; ");
    if (foreign != lastForeign_ && !foreign.empty()) spdlog::info("bridges: {}", foreign);
    lastForeign_ = foreign;
    if (plan.txn.empty()) return done(Result::ok());
    spdlog::info("bridges: {}", join(plan.changes, "; "));
    plan.txn.comment("kovs-agent: bridge reconcile");
    ++transactions_;
    auto token = alive_;
    auto shared = std::make_shared<BridgePlan>(std::move(plan));
    client_.transact(shared->txn, [this, token, shared, done](const std::vector<ovsdb::Json>* results, const std::string& err) {
        if (!*token) return;
        if (!results) return done(Result::failed(err));
        if (onApplied_) onApplied_(*shared);
        // Until the replica shows our commit, a re-plan would repeat it.
        bool settle = !planner_.plan(client_.replica()).txn.empty();
        if (settle) settlingUntil_ = EventLoop::Clock::now() + kSettle;
        done(Result::ok());
        if (settle) engine_.trigger(kSettle);
    });
}

void BridgeReconciler::reattach(const std::string& port) {
    reattach_ = port;
    reattachCfg_.reset();
    engine_.trigger();
}

bool BridgeReconciler::detach(const ReconcileEngine::Done& done) {
    using Result = ReconcileEngine::Result;
    if (reattach_.empty()) return false;
    const auto& replica = client_.replica();
    if (reattachCfg_) {
        int64_t cur = -1;
        for (const auto& [uuid, root] : replica.table("Open_vSwitch")) cur = root.value("cur_cfg", int64_t{-1});
        // The monitor update that carries vswitchd's cur_cfg runs the next pass.
        if (cur < *reattachCfg_) {
            done(Result::ok());
            return true;
        }
        spdlog::info("bridges: ovs-vswitchd let go of port {}; adding it back", reattach_);
        reattach_.clear();
        reattachCfg_.reset();
        return false;
    }
    auto port = replica.findByName("Port", reattach_);
    std::optional<std::string> bridge;
    if (port) {
        for (const auto& [buuid, br] : replica.table("Bridge")) {
            auto ports = ovsdb::uuidSet(br.value("ports", ovsdb::Json()));
            if (std::find(ports.begin(), ports.end(), port->first) != ports.end()) bridge = buuid;
        }
    }
    if (!bridge) {  // not in a bridge (any more): the plan adds it
        reattach_.clear();
        return false;
    }
    ovsdb::Transaction txn;
    txn.mutate("Bridge", ovsdb::whereUuid(*bridge),
               ovsdb::Json::array({ovsdb::Json::array({"ports", "delete", ovsdb::set({ovsdb::uuid(port->first)})})}), reattach_);
    txn.mutate("Open_vSwitch", ovsdb::Json::array(), ovsdb::Json::array({ovsdb::Json::array({"next_cfg", "+=", 1})}), "(root)");
    txn.select("Open_vSwitch", ovsdb::Json::array(), {"next_cfg"}, "(root)");
    txn.comment("kovs-agent: take port " + reattach_ + " out, to put it back on its new device");
    spdlog::info("bridges: port {} has a new device; taking it out of ovs-vswitchd to put it back", reattach_);
    ++transactions_;
    auto token = alive_;
    client_.transact(txn, [this, token, done](const std::vector<ovsdb::Json>* results, const std::string& err) {
        if (!*token) return;
        if (!results) return done(Result::failed("take port " + reattach_ + " out: " + err));
        int64_t cfg = -1;
        for (const auto& row : results->at(2).value("rows", ovsdb::Json::array())) cfg = row.value("next_cfg", int64_t{-1});
        reattachCfg_ = cfg;
        done(Result::ok());
    });
    return true;
}

bool BridgeReconciler::reconcileOnce(std::chrono::milliseconds timeout) {
    start();
    bool ok = loop_.runUntil([this] { return converged(); }, timeout);
    notConverged_.clear();
    if (!ok) {
        notConverged_ = client_.state() != ovs::OvsdbClient::State::Ready
                            ? "OVSDB not ready (" + std::string(toString(client_.state())) + ")"
                            : "bridges not converged: " + join(planner_.plan(client_.replica()).changes, "; ");
    }
    return ok;
}

std::string BridgeReconciler::lastError() const {
    auto error = engine_.lastError();
    return error.empty() ? notConverged_ : error;
}

void BridgeReconciler::cleanup(std::chrono::milliseconds timeout) {
    engine_.stop();  // or the next monitor update would rebuild what we remove
    client_.start();
    if (!client_.waitReady(timeout))
        throw Error("bridge cleanup: OVSDB " + std::string(toString(client_.state())) + " after " +
                    std::to_string(timeout.count()) + " ms");
    auto plan = planner_.planCleanup(client_.replica());
    if (plan.txn.empty()) return;
    spdlog::info("bridges cleanup: {}", join(plan.changes, "; "));
    client_.transactSync(plan.txn);
    ++transactions_;
}

void BridgeReconciler::status(nlohmann::json& out) const {
    using ovsdb::Json;
    out["ovsdb"] = {{"state", toString(client_.state())},
                    {"reconnects", client_.reconnects()},
                    {"transactions", client_.transactionsSent()}};
    auto bridges = Json::array();
    const auto& replica = client_.replica();
    for (const auto& [uuid, br] : replica.table("Bridge")) {
        auto ports = Json::array();
        for (const auto& pu : ovsdb::uuidSet(br.value("ports", Json()))) {
            if (const auto* p = replica.row("Port", pu)) ports.push_back(ovsdb::stringOr(*p, "name"));
        }
        bridges.push_back({{"name", ovsdb::stringOr(br, "name")},
                           {"datapathType", ovsdb::stringOr(br, "datapath_type")},
                           {"owned", planner_.owned(br)},
                           {"ports", ports}});
    }
    out["bridges"] = bridges;
    engine_.status(out["ovsdb"]);
}

void BridgeReconciler::metrics(MetricsText& m) const {
    m.counter("kovs_ovsdb_reconnects_total", "Reconnections to ovsdb-server.", static_cast<double>(client_.reconnects()));
    m.counter("kovs_ovsdb_transactions_total", "OVSDB transactions sent.", static_cast<double>(client_.transactionsSent()));
    m.counter("kovs_bridge_repairs_total", "Transactions the bridge job sent to bring OVSDB to the desired state.",
              static_cast<double>(transactions_));
    engine_.metrics(m);
}

std::string BridgeReconciler::notReady() const {
    if (client_.state() != ovs::OvsdbClient::State::Ready) return "OVSDB not connected";
    auto error = engine_.lastError();
    if (!converged()) return "bridges not converged" + (error.empty() ? std::string() : ": " + error);
    return "";
}

}  // namespace kovs::bridge
