#include "bridge/BridgeReconciler.hpp"

#include <optional>

#include "base/Error.hpp"
#include "base/Log.hpp"

namespace kovs::bridge {

namespace {
constexpr std::chrono::milliseconds kBackoffMin{100};
constexpr std::chrono::milliseconds kBackoffMax{5000};
// After our own commit, the monitor update that reflects it may trail the
// reply; re-plan then, or after this long if no update comes.
constexpr std::chrono::milliseconds kSettle{500};

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
    return s;
}
}  // namespace

BridgeReconciler::BridgeReconciler(EventLoop& loop, ovs::OvsdbClient& client, BridgeOptions opts)
    : loop_(loop), client_(client), planner_(std::move(opts)), retry_(loop, kBackoffMin, kBackoffMax, [this] {
          settling_ = false;
          reconcile();
      }) {}

BridgeReconciler::~BridgeReconciler() {
    *alive_ = false;
    if (settleTimer_) loop_.cancel(settleTimer_);
}

void BridgeReconciler::start() {
    if (started_) return;
    started_ = true;
    auto token = alive_;
    client_.addChangeHandler([this, token] {
        if (!*token) return;
        settling_ = false;
        trigger();
    });
    client_.addStateHandler([this, token](ovs::OvsdbClient::State s) {
        if (*token && s == ovs::OvsdbClient::State::Ready) trigger();
    });
    client_.start();
    trigger();
}

void BridgeReconciler::trigger() {
    if (scheduled_) return;
    scheduled_ = true;
    auto token = alive_;
    loop_.post([this, token] {
        if (!*token) return;
        scheduled_ = false;
        reconcile();
    });
}

void BridgeReconciler::settleLater() {
    if (settleTimer_) return;
    auto token = alive_;
    settleTimer_ = loop_.after(kSettle, [this, token] {
        if (!*token) return;
        settleTimer_ = 0;
        settling_ = false;
        reconcile();
    });
}

bool BridgeReconciler::converged() const {
    return client_.state() == ovs::OvsdbClient::State::Ready && !inFlight_ && planner_.plan(client_.replica()).txn.empty();
}

void BridgeReconciler::reconcile() {
    if (stopped_) return;
    if (client_.state() != ovs::OvsdbClient::State::Ready) return;  // the Ready transition triggers us again
    if (inFlight_ || settling_) {
        dirty_ = true;
        return;
    }
    auto plan = planner_.plan(client_.replica());
    auto foreign = join(plan.foreign);
    if (foreign != lastForeign_ && !foreign.empty()) spdlog::info("bridges: {}", foreign);
    lastForeign_ = foreign;
    if (plan.txn.empty()) {
        retry_.succeeded();
        return;
    }
    spdlog::info("bridges: {}", join(plan.changes));
    plan.txn.comment("kovs-agent: bridge reconcile");
    inFlight_ = true;
    dirty_ = false;
    ++transactions_;
    auto token = alive_;
    auto shared = std::make_shared<BridgePlan>(std::move(plan));
    client_.transact(shared->txn, [this, token, shared](const std::vector<ovsdb::Json>* results, const std::string& err) {
        if (!*token) return;
        inFlight_ = false;
        if (!results) {
            ++failures_;
            lastError_ = err;
            spdlog::warn("bridges: {}; retrying in {} ms", err, retry_.nextDelay().count());
            retry_.schedule();
            return;
        }
        lastError_.clear();
        retry_.succeeded();
        if (onApplied_) onApplied_(*shared);
        // Until the replica shows our commit, a re-plan would repeat it.
        if (!planner_.plan(client_.replica()).txn.empty()) {
            settling_ = true;
            settleLater();
        } else if (dirty_) {
            trigger();
        }
    });
}

bool BridgeReconciler::reconcileOnce(std::chrono::milliseconds timeout) {
    start();
    bool ok = loop_.runUntil([this] { return converged(); }, timeout);
    if (!ok && lastError_.empty()) {
        lastError_ = client_.state() != ovs::OvsdbClient::State::Ready
                         ? "OVSDB not ready (" + std::string(toString(client_.state())) + ")"
                         : "bridges not converged: " + join(planner_.plan(client_.replica()).changes);
    }
    return ok;
}

void BridgeReconciler::cleanup(std::chrono::milliseconds timeout) {
    stopped_ = true;  // or the next monitor update would rebuild what we remove
    client_.start();
    if (!client_.waitReady(timeout))
        throw Error("bridge cleanup: OVSDB " + std::string(toString(client_.state())) + " after " +
                    std::to_string(timeout.count()) + " ms");
    auto plan = planner_.planCleanup(client_.replica());
    if (plan.txn.empty()) return;
    spdlog::info("bridges cleanup: {}", join(plan.changes));
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
}

void BridgeReconciler::metrics(MetricsText& m) const {
    m.counter("kovs_ovsdb_reconnects_total", "Reconnections to ovsdb-server.", static_cast<double>(client_.reconnects()));
    m.counter("kovs_ovsdb_transactions_total", "OVSDB transactions sent.", static_cast<double>(client_.transactionsSent()));
    m.counter("kovs_bridge_repairs_total", "Transactions the bridge job sent to bring OVSDB to the desired state.",
              static_cast<double>(transactions_));
}

std::string BridgeReconciler::notReady() const {
    if (client_.state() != ovs::OvsdbClient::State::Ready) return "OVSDB not connected";
    if (!converged()) return "bridges not converged" + (lastError_.empty() ? std::string() : ": " + lastError_);
    return "";
}

}  // namespace kovs::bridge
