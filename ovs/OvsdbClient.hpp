#pragma once
// An OVSDB client (RFC 7047) for the Open_vSwitch database: transact, and a
// monitor_cond/update2 replica of the tables the agent reconciles. When
// ovsdb-server goes away it reconnects with exponential backoff, re-reads the
// schema and re-monitors; the replica is replaced by the fresh initial dump.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/EventLoop.hpp"
#include "base/RetryTimer.hpp"
#include "ovs/JsonRpcConnection.hpp"
#include "ovs/OvsdbReplica.hpp"
#include "ovs/OvsdbTransaction.hpp"

namespace kovs::ovs {

struct OvsdbClientOptions {
    std::string remote = "unix:/var/run/openvswitch/db.sock";
    std::string database = "Open_vSwitch";
    // Empty: no monitor (short-lived callers such as kovs-cni only transact).
    std::vector<std::string> monitorTables = {"Open_vSwitch", "Bridge", "Port", "Interface"};
    // Columns to monitor per table (absent: all). vswitchd rewrites
    // Interface statistics every few seconds; leaving them out spares the
    // agent a wakeup per interface per interval. mtu_request: the bridge job
    // sets the gateway's MTU there.
    std::map<std::string, std::vector<std::string>> monitorColumns = {
        {"Interface",
         {"name", "type", "options", "external_ids", "ofport", "mac_in_use", "mtu", "mtu_request", "link_state",
          "admin_state", "error"}}};
    std::chrono::milliseconds requestTimeout{5000};
    // A tcp: remote that does not answer is given up after this (non-blocking
    // connect); the reconnect backoff then applies.
    std::chrono::milliseconds connectTimeout{5000};
    std::chrono::milliseconds backoffMin{50};
    std::chrono::milliseconds backoffMax{2000};
};

class OvsdbClient {
public:
    enum class State { Disconnected, Connecting, Ready };
    using Json = nlohmann::json;
    using TransactCallback = std::function<void(const std::vector<Json>* results, const std::string& error)>;

    OvsdbClient(EventLoop& loop, OvsdbClientOptions opts);
    ~OvsdbClient();
    OvsdbClient(const OvsdbClient&) = delete;
    OvsdbClient& operator=(const OvsdbClient&) = delete;

    // Starts connecting (and keeps reconnecting) in the background.
    void start();
    // Runs the loop until Ready (schema read, replica filled); false on timeout.
    bool waitReady(std::chrono::milliseconds timeout);
    State state() const { return state_; }

    // Handlers accumulate (reconcilers and status reporting both listen).
    void addStateHandler(std::function<void(State)> h) { onState_.push_back(std::move(h)); }
    // Runs after each monitor update (and the initial dump) was applied.
    void addChangeHandler(std::function<void()> h) { onChange_.push_back(std::move(h)); }

    const OvsdbReplica& replica() const { return replica_; }

    // Sends a transaction. The callback gets the per-operation results, or an
    // error naming the failed operation ("insert Port gw0: constraint violation: ...").
    void transact(const ovsdb::Transaction& txn, TransactCallback cb);
    // Runs the loop until the reply; throws kovs::Error, at once when there is
    // no connection (kovs-cni must fail fast, not wait for a backoff).
    std::vector<Json> transactSync(const ovsdb::Transaction& txn);

    uint64_t transactionsSent() const { return transactions_; }
    uint64_t reconnects() const { return reconnects_; }

private:
    void connect();
    void onConnected();
    void scheduleReconnect(const std::string& why);
    void setState(State s);

    EventLoop& loop_;
    OvsdbClientOptions opts_;
    std::unique_ptr<JsonRpcConnection> conn_;
    OvsdbReplica replica_;
    State state_ = State::Disconnected;
    RetryTimer reconnect_;
    bool started_ = false;
    uint64_t transactions_ = 0;
    uint64_t reconnects_ = 0;
    uint64_t sessions_ = 0;
    void notifyChange();

    std::vector<std::function<void(State)>> onState_;
    std::vector<std::function<void()>> onChange_;
    std::string lastConnectError_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

const char* toString(OvsdbClient::State s);

}  // namespace kovs::ovs
