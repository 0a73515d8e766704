#include "ovs/PacketInClient.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "base/Error.hpp"
#include "base/UnixAddress.hpp"

namespace kovs::ovs {

using namespace openflow;

PacketInClient::PacketInClient(EventLoop& loop, PacketInClientOptions opts, PacketInHandler onPacketIn)
    : loop_(loop), opts_(std::move(opts)), onPacketIn_(std::move(onPacketIn)),
      retry_(loop, opts_.backoffMin, opts_.backoffMax, [this] { connect(); }) {}

PacketInClient::~PacketInClient() {
    *alive_ = false;
    if (statsTimer_) loop_.cancel(statsTimer_);
    if (fd_) loop_.unwatch(fd_.get());
}

void PacketInClient::start() {
    if (fd_ || retry_.pending()) return;
    connect();
}

void PacketInClient::setMeter(uint32_t id, uint32_t ratePktps) {
    bool found = false;
    for (auto& m : opts_.meters) {
        if (m.id == id) {
            m.ratePktps = ratePktps;
            found = true;
        }
    }
    if (!found) opts_.meters.push_back({id, ratePktps});
    if (fd_) sendMeters();
}

const MeterStats* PacketInClient::meterStats(uint32_t id) const {
    auto it = stats_.find(id);
    return it == stats_.end() ? nullptr : &it->second;
}

void PacketInClient::connect() {
    try {
        UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!fd) throwErrno("socket for " + opts_.socketPath);
        const auto addr = unixAddress(opts_.socketPath, "connect");
        // A unix socket connects at once or not at all (EAGAIN: vswitchd
        // does not accept; ENOENT, ECONNREFUSED: it is not there).
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) < 0) throwErrno("connect " + opts_.socketPath);
        fd_ = std::move(fd);
    } catch (const Error& e) {
        if (lastError_ != e.what()) spdlog::debug("openflow {}: {}", opts_.socketPath, e.what());
        lastError_ = e.what();
        retry_.schedule();
        return;
    }
    ++connects_;
    helloSeen_ = false;
    framer_ = Framer();
    out_.clear();
    loop_.watch(fd_.get(), EPOLLIN, [this](uint32_t events) {
        if (events & EPOLLOUT) flush();
        if (fd_ && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) onReadable();
    });
    send(hello(nextXid_++));
    // A service connection gets no packet-in until miss_send_len is set.
    if (opts_.missSendLen) send(setConfig(nextXid_++, opts_.missSendLen));
    sendMeters();
    if (!statsTimer_) askStats();
}

void PacketInClient::setReady(bool ready) {
    if (ready == ready_) return;
    ready_ = ready;
    if (onReady_) onReady_(ready, static_cast<uint32_t>(connects_));
}

void PacketInClient::closeWith(const std::string& why) {
    if (!fd_) return;
    loop_.unwatch(fd_.get());
    fd_.reset();
    helloSeen_ = false;
    out_.clear();
    if (statsTimer_) loop_.cancel(statsTimer_);
    statsTimer_ = 0;
    spdlog::warn("openflow {}: {}; reconnecting", opts_.socketPath, why);
    lastError_ = why;
    retry_.schedule();
    setReady(false);
}

void PacketInClient::sendMeters() {
    meterFailed_ = false;
    firstMeterXid_ = nextXid_;
    for (const auto& m : opts_.meters) {
        // Add fails with METER_EXISTS when it is there (ignored); modify then sets its rate.
        send(meterMod(nextXid_++, MeterCommand::Add, m.id, m.ratePktps));
        send(meterMod(nextXid_++, MeterCommand::Modify, m.id, m.ratePktps));
    }
    // vswitchd answers in order: an error of a meter mod comes before this.
    barrierXid_ = nextXid_++;
    send(barrierRequest(barrierXid_));
}

void PacketInClient::askStats() {
    statsTimer_ = 0;
    if (!fd_) return;
    for (const auto& m : opts_.meters) send(meterStatsRequest(nextXid_++, m.id));
    statsTimer_ = loop_.after(opts_.statsInterval, [this] { askStats(); });
}

void PacketInClient::send(const std::string& message) {
    if (!fd_) return;
    out_ += message;
    flush();
}

void PacketInClient::flush() {
    while (fd_ && !out_.empty()) {
        ssize_t n = ::send(fd_.get(), out_.data(), out_.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            loop_.modify(fd_.get(), EPOLLIN | EPOLLOUT);
            return;
        }
        if (n < 0) return closeWith("send: " + std::string(std::strerror(errno)));
        out_.erase(0, size_t(n));
    }
    if (fd_) loop_.modify(fd_.get(), EPOLLIN);
}

void PacketInClient::onReadable() {
    char buf[16384];
    size_t budget = opts_.readBudget;
    while (fd_ && budget > 0) {
        ssize_t n = ::recv(fd_.get(), buf, std::min(sizeof buf, budget), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0) return closeWith("recv: " + std::string(std::strerror(errno)));
        if (n == 0) return closeWith("closed by vswitchd");
        budget -= size_t(n);
        framer_.feed(std::string_view(buf, size_t(n)));
        auto alive = alive_;
        try {
            while (auto message = framer_.next()) {
                handle(*message);
                if (!*alive || !fd_) return;  // the handler destroyed or closed this client
            }
        } catch (const Error& e) {
            return closeWith(e.what());
        }
    }
}

void PacketInClient::handle(const std::string& message) {
    const auto h = headerOf(message);
    switch (static_cast<Type>(h.type)) {
        case Type::Hello:
            if (h.version < kVersion13) return closeWith("vswitchd offers OpenFlow version " + std::to_string(h.version) + ", 1.3 is needed");
            if (!helloSeen_) spdlog::info("openflow {}: connected, receiving packet-ins", opts_.socketPath);
            helloSeen_ = true;
            retry_.succeeded();
            lastError_.clear();
            return;
        case Type::EchoRequest: return send(echoReply(message));
        case Type::PacketIn:
            try {
                auto p = decodePacketIn(message);
                ++packetIns_;
                onPacketIn_(p);
            } catch (const Error& e) {
                // One bad message: counted and skipped, the stream's framing still holds.
                ++malformed_;
                spdlog::debug("openflow {}: {}", opts_.socketPath, e.what());
            }
            return;
        case Type::BarrierReply:
            if (h.xid == barrierXid_ && !meterFailed_) setReady(true);
            return;
        case Type::Error: {
            const auto e = decodeError(message);
            if (e.meterExists()) return;
            if (h.xid >= firstMeterXid_ && h.xid < barrierXid_) meterFailed_ = true;
            lastError_ = "OpenFlow error type " + std::to_string(e.type) + " code " + std::to_string(e.code) + " from " +
                         opts_.socketPath + " (xid " + std::to_string(h.xid) + ")";
            spdlog::warn("openflow {}", lastError_);
            return;
        }
        case Type::MultipartReply:
            try {
                if (auto meters = decodeMeterStats(message)) {
                    for (auto& m : *meters) stats_[m.meterId] = std::move(m);
                }
            } catch (const Error& e) {
                ++malformed_;
                spdlog::debug("openflow {}: {}", opts_.socketPath, e.what());
            }
            return;
        default: return;
    }
}

}  // namespace kovs::ovs
