#include "ovs/OvsdbClient.hpp"

#include <optional>

#include "base/Error.hpp"
#include "base/Log.hpp"

namespace kovs::ovs {

const char* toString(OvsdbClient::State s) {
    switch (s) {
    case OvsdbClient::State::Disconnected: return "disconnected";
    case OvsdbClient::State::Connecting: return "connecting";
    case OvsdbClient::State::Ready: return "ready";
    }
    return "?";
}

OvsdbClient::OvsdbClient(EventLoop& loop, OvsdbClientOptions opts)
    : loop_(loop), opts_(std::move(opts)), reconnect_(loop_, opts_.backoffMin, opts_.backoffMax, [this] { connect(); }) {}

OvsdbClient::~OvsdbClient() {
    *alive_ = false;
    conn_.reset();
}

void OvsdbClient::setState(State s) {
    if (s == state_) return;
    state_ = s;
    spdlog::debug("ovsdb {}: {}", opts_.remote, toString(s));
    auto token = alive_;
    for (size_t i = 0; i < onState_.size() && *token; ++i) onState_[i](s);
}

void OvsdbClient::start() {
    if (started_) return;
    started_ = true;
    connect();
}

void OvsdbClient::connect() {
    setState(State::Connecting);
    try {
        conn_ = std::make_unique<JsonRpcConnection>(loop_, opts_.remote, opts_.connectTimeout);
    } catch (const Error& e) {
        scheduleReconnect(e.what());
        return;
    }
    lastConnectError_.clear();
    conn_->setCloseHandler([this](const std::string& why) {
        // Destroying the connection inside its own callback is unsafe: defer it.
        auto token = alive_;
        loop_.post([this, token, why] {
            if (*token) scheduleReconnect(why);
        });
    });
    conn_->setNotificationHandler([this](const std::string& method, const Json& params) {
        if (method != "update2" || !params.is_array() || params.size() < 2) return;
        try {
            replica_.apply(params[1]);
        } catch (const Error& e) {
            spdlog::error("ovsdb {}: {}; resynchronizing", opts_.remote, e.what());
            conn_->close(e.what());
            return;
        }
        notifyChange();
    });
    onConnected();
}

void OvsdbClient::onConnected() {
    uint64_t session = ++sessions_;
    auto fail = [this, session](const std::string& what) {
        return [this, session, what](const std::string& err) {
            if (session != sessions_ || !conn_) return;
            spdlog::warn("ovsdb {}: {}: {}", opts_.remote, what, err);
            conn_->close(what + ": " + err);
        };
    };
    if (opts_.monitorTables.empty()) {
        reconnect_.succeeded();
        setState(State::Ready);
        return;
    }
    conn_->request(
        "get_schema", Json::array({opts_.database}),
        [this, session, fail](const Json& schema) {
            if (session != sessions_) return;
            try {
                replica_.setSchema(schema);
            } catch (const Error& e) {
                fail("get_schema")(e.what());
                return;
            }
            Json requests = Json::object();
            for (const auto& t : opts_.monitorTables) {
                requests[t] = Json::object();
                auto cols = opts_.monitorColumns.find(t);
                if (cols != opts_.monitorColumns.end()) requests[t]["columns"] = cols->second;
            }
            conn_->request(
                "monitor_cond", Json::array({opts_.database, "kovs", requests}),
                [this, session, fail](const Json& initial) {
                    if (session != sessions_) return;
                    replica_.clear();
                    try {
                        replica_.apply(initial.is_null() ? Json::object() : initial);
                    } catch (const Error& e) {
                        fail("monitor_cond")(e.what());
                        return;
                    }
                    reconnect_.succeeded();
                    setState(State::Ready);
                    notifyChange();
                },
                fail("monitor_cond"), opts_.requestTimeout);
        },
        fail("get_schema"), opts_.requestTimeout);
}

void OvsdbClient::notifyChange() {
    auto token = alive_;
    for (size_t i = 0; i < onChange_.size() && *token; ++i) onChange_[i]();
}

void OvsdbClient::scheduleReconnect(const std::string& why) {
    conn_.reset();
    lastConnectError_ = why;
    ++sessions_;
    if (state_ == State::Ready) ++reconnects_;
    if (!reconnect_.pending())
        spdlog::info("ovsdb {}: {}; reconnecting in {} ms", opts_.remote, why, reconnect_.nextDelay().count());
    setState(State::Disconnected);
    reconnect_.schedule();
}

bool OvsdbClient::waitReady(std::chrono::milliseconds timeout) {
    start();
    return loop_.runUntil([this] { return state_ == State::Ready; }, timeout);
}

void OvsdbClient::transact(const ovsdb::Transaction& txn, TransactCallback cb) {
    auto token = alive_;
    if (!conn_) {
        std::string why = "transact " + txn.database() + " (" + txn.describeAll() + "): not connected to " + opts_.remote +
                          (lastConnectError_.empty() ? "" : " (" + lastConnectError_ + ")");
        loop_.post([token, cb, why] {
            if (*token) cb(nullptr, why);
        });
        return;
    }
    auto labels = txn.describeAll();
    ++transactions_;
    spdlog::debug("ovsdb {}: transact {}", opts_.remote, labels);
    conn_->request(
        "transact", txn.params(),
        [txn, cb](const Json& result) {
            std::vector<Json> results;
            try {
                results = txn.checkResult(result);
            } catch (const Error& e) {
                cb(nullptr, e.what());
                return;
            }
            cb(&results, "");
        },
        [cb, labels, db = txn.database()](const std::string& err) { cb(nullptr, "transact " + db + " (" + labels + "): " + err); },
        opts_.requestTimeout);
}

std::vector<OvsdbClient::Json> OvsdbClient::transactSync(const ovsdb::Transaction& txn) {
    start();
    // Shared, so a reply arriving after we gave up writes nowhere dangerous.
    struct Outcome {
        std::optional<std::vector<Json>> results;
        std::optional<std::string> error;
    };
    auto out = std::make_shared<Outcome>();
    transact(txn, [out](const std::vector<Json>* r, const std::string& e) {
        if (r) out->results = *r;
        else out->error = e;
    });
    loop_.runUntil([&] { return out->results || out->error; }, opts_.requestTimeout + std::chrono::seconds(1));
    if (out->results) return *out->results;
    const auto& error = out->error;
    throw Error(error ? *error : "transact " + txn.database() + " (" + txn.describeAll() + "): no reply");
}

}  // namespace kovs::ovs
