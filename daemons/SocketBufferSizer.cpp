#include "daemons/SocketBufferSizer.hpp"

#include <spdlog/spdlog.h>

#include "daemons/PacketSocketBuffers.hpp"

namespace kovs::daemons {

SocketBufferSizer::SocketBufferSizer(EventLoop& loop, std::string rundir, int kib, std::chrono::milliseconds resync)
    : rundir_(std::move(rundir)), kib_(kib),
      engine_(loop, {.job = "ovs-vswitchd socket buffers", .resync = resync}, [this](bool, ReconcileEngine::Done done) {
          bool sendSocket = pass();
          done(ReconcileEngine::Result::ok());
          if (!sendSocket) engine_.trigger(kSendSocketPoll);
      }) {}

void SocketBufferSizer::start() {
    if (kib_ != 0) engine_.start();
}

bool SocketBufferSizer::pass() {
    pid_t pid = vswitchdPid(rundir_);
    auto r = sizePacketSocketBuffers(pid, kib_ * 1024);
    if (r.resized > 0)
        spdlog::info("ovs-vswitchd (pid {}): {} of {} packet socket(s) given {} KiB buffers", pid, r.resized, r.sockets, kib_);
    resized_ += static_cast<uint64_t>(r.resized);
    return r.sendSocket;
}

void SocketBufferSizer::status(nlohmann::json& out) const {
    if (kib_ == 0) return;
    out["socketBuffers"] = {{"kib", kib_}, {"resized", resized_}, {"error", engine_.lastError()}};
    engine_.status(out["socketBuffers"]);
}

void SocketBufferSizer::metrics(MetricsText& m) const {
    m.counter("kovs_vswitchd_socket_resizes_total", "ovs-vswitchd AF_PACKET sockets given larger buffers (ovs.socketBufferKiB).",
              static_cast<double>(resized_));
    if (kib_ != 0) engine_.metrics(m);
}

}  // namespace kovs::daemons
