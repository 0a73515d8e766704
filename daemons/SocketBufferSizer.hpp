#pragma once
// Gives ovs-vswitchd's AF_PACKET sockets the buffers TCP bursts need
// (daemons/PacketSocketBuffers.hpp has why and how). vswitchd opens a socket at
// the kernel's default size for every port it adds and after a restart, so
// a pass runs after every OVSDB change and every resync (its ReconcileEngine);
// sockets already sized are left alone, so a pass with nothing new costs a
// walk of /proc/PID/fd. The socket vswitchd sends on opens at its first
// transmit, which nothing announces: until it is there, a pass runs every
// second. Throughput suffers when it fails, nothing breaks.
#include <chrono>
#include <cstdint>
#include <string>

#include "base/Job.hpp"
#include "base/ReconcileEngine.hpp"

namespace kovs::daemons {

class SocketBufferSizer : public Job {
public:
    // How often a pass runs while vswitchd has no send socket yet.
    static constexpr std::chrono::seconds kSendSocketPoll{1};

    // kib 0: leave OVS's default (the job does nothing).
    SocketBufferSizer(EventLoop& loop, std::string rundir, int kib, std::chrono::milliseconds resync);

    void start();
    // vswitchd may have opened sockets (a port added, a restart).
    void trigger() { engine_.trigger(); }

    std::string name() const override { return "socketBuffers"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;

private:
    // True when vswitchd's send socket is there.
    bool pass();

    std::string rundir_;
    int kib_;
    uint64_t resized_ = 0;
    ReconcileEngine engine_;
};

}  // namespace kovs::daemons
