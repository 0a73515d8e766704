#pragma once
// Gives ovs-vswitchd's AF_PACKET sockets the buffers TCP bursts need
// (ovs/PacketSocketBuffers.hpp has why and how). vswitchd opens a socket at
// the kernel's default size for every port it adds and after a restart, so
// this runs after every OVSDB change and every resync; sockets already sized
// are left alone, so a pass with nothing new costs a walk of /proc/PID/fd.
#include <cstdint>
#include <string>

#include "base/Job.hpp"
#include "base/LastError.hpp"

namespace kovs::ovs {

class SocketBufferSizer : public Job {
public:
    // kib 0: leave OVS's default (the job does nothing).
    SocketBufferSizer(std::string rundir, int kib) : rundir_(std::move(rundir)), kib_(kib) {}

    void run();

    std::string name() const override { return "socketBuffers"; }
    void status(nlohmann::json& out) const override;
    void metrics(MetricsText& out) const override;

private:
    std::string rundir_;
    int kib_;
    uint64_t resized_ = 0;
    LastError error_;
};

}  // namespace kovs::ovs
