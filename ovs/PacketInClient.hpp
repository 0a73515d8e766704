#pragma once
// An OpenFlow 1.3 connection to a bridge's management socket
// (<rundir>/<bridge>.mgmt) that receives the packet-ins of controller
// actions (policy logging) and owns the meters those actions name.
//
// vswitchd treats a connection to the mgmt socket as a "service" connection:
// it gets asynchronous messages (packet-ins) only after it sets a nonzero
// miss_send_len (OFPT_SET_CONFIG), which this client does first thing. It
// then sets each meter (METER_MOD add, and modify for one that exists: a
// meter is never deleted, as that would be a moment without the limit), and
// so again after every reconnect: a restarted vswitchd has no meters, and
// the controller actions of the flows the flow job reinstalls name them.
//
// On the agent's loop: the connect to a unix socket does not wait; a
// connection that fails or closes (vswitchd restarted) is retried with a
// backoff (RetryTimer) until it is back. ECHO_REQUESTs are answered. The
// meters' statistics are asked for every `statsInterval`.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/EventLoop.hpp"
#include "base/RetryTimer.hpp"
#include "base/UniqueFd.hpp"
#include "ovs/OpenFlowMessages.hpp"

namespace kovs::ovs {

struct PacketInClientOptions {
    std::string socketPath;  // "/var/run/openvswitch/br-int.mgmt"
    struct Meter {
        uint32_t id = 0;
        uint32_t ratePktps = 0;
    };
    std::vector<Meter> meters;
    // OFPT_SET_CONFIG's miss_send_len; 0 sends none (the tests show that no
    // packet-in arrives then).
    uint16_t missSendLen = 128;
    std::chrono::milliseconds backoffMin{100}, backoffMax{std::chrono::seconds(5)};
    std::chrono::milliseconds statsInterval{std::chrono::seconds(10)};
    // Bytes read per readiness callback: a flood of packet-ins (a meter
    // that failed to install) cannot hold the loop for long.
    size_t readBudget = 64 * 1024;
};

class PacketInClient {
public:
    using PacketInHandler = std::function<void(const openflow::PacketIn&)>;
    // ready: every meter is set on this vswitchd (vswitchd answered the
    // barrier after the meter mods, and no error before it); `generation`
    // counts the connections, so a flow added after a reconnect can say which
    // vswitchd's meter it names. false when the connection is lost.
    using ReadyHandler = std::function<void(bool ready, uint32_t generation)>;

    PacketInClient(EventLoop& loop, PacketInClientOptions opts, PacketInHandler onPacketIn);
    ~PacketInClient();
    PacketInClient(const PacketInClient&) = delete;
    PacketInClient& operator=(const PacketInClient&) = delete;

    void setReadyHandler(ReadyHandler h) { onReady_ = std::move(h); }
    // Connects now (and keeps reconnecting); does nothing when started.
    void start();
    // Sets a meter's rate (kept for reconnects); sent now when connected.
    void setMeter(uint32_t id, uint32_t ratePktps);

    bool connected() const { return static_cast<bool>(fd_) && helloSeen_; }
    bool metersReady() const { return ready_; }
    uint64_t connects() const { return connects_; }
    uint64_t packetIns() const { return packetIns_; }
    uint64_t malformed() const { return malformed_; }  // packet-ins that did not decode
    const std::string& lastError() const { return lastError_; }
    // The meter's last read statistics (none yet: an empty entry).
    const openflow::MeterStats* meterStats(uint32_t id) const;

private:
    void connect();
    void closeWith(const std::string& why);
    void onReadable();
    void handle(const std::string& message);
    void send(const std::string& message);
    void flush();
    void sendMeters();
    void askStats();

    EventLoop& loop_;
    PacketInClientOptions opts_;
    PacketInHandler onPacketIn_;
    ReadyHandler onReady_;
    bool ready_ = false;
    uint32_t barrierXid_ = 0;     // the barrier after the last meter mods
    uint32_t firstMeterXid_ = 0;  // their xids, from here to the barrier's
    bool meterFailed_ = false;
    void setReady(bool ready);
    UniqueFd fd_;
    openflow::Framer framer_;
    std::string out_;
    bool helloSeen_ = false;
    uint32_t nextXid_ = 1;
    RetryTimer retry_;
    EventLoop::TimerId statsTimer_ = 0;
    uint64_t connects_ = 0, packetIns_ = 0, malformed_ = 0;
    std::string lastError_;
    std::map<uint32_t, openflow::MeterStats> stats_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace kovs::ovs
