#include "ovs/SocketBufferSizer.hpp"

#include <spdlog/spdlog.h>

#include "ovs/PacketSocketBuffers.hpp"

namespace kovs::ovs {

void SocketBufferSizer::run() {
    if (kib_ == 0) return;
    try {
        pid_t pid = vswitchdPid(rundir_);
        auto r = sizePacketSocketBuffers(pid, kib_ * 1024);
        if (r.resized > 0)
            spdlog::info("ovs-vswitchd (pid {}): {} of {} packet socket(s) given {} KiB buffers", pid, r.resized, r.sockets, kib_);
        resized_ += static_cast<uint64_t>(r.resized);
        if (error_.cleared()) spdlog::info("ovs-vswitchd socket buffers: sized again");
    } catch (const std::exception& e) {  // also filesystem_error from walking /proc/PID/fd
        // Throughput suffers, nothing breaks: say so once, not every resync.
        if (error_.failed(e.what())) spdlog::warn("ovs-vswitchd socket buffers left at the kernel default: {}", e.what());
    }
}

void SocketBufferSizer::status(nlohmann::json& out) const {
    if (kib_ == 0) return;
    out["socketBuffers"] = {{"kib", kib_}, {"resized", resized_}, {"error", error_.str()}};
}

void SocketBufferSizer::metrics(MetricsText& m) const {
    m.counter("kovs_vswitchd_socket_resizes_total", "ovs-vswitchd AF_PACKET sockets given larger buffers (ovs.socketBufferKiB).",
              static_cast<double>(resized_));
}

}  // namespace kovs::ovs
