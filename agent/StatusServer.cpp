#include "agent/StatusServer.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>

#include <spdlog/spdlog.h>

#include "base/Error.hpp"
#include "base/JsonDepth.hpp"
#include "base/UnixAddress.hpp"

namespace kovs::agent {
namespace {

constexpr size_t kMaxRequest = 64 * 1024;

}  // namespace

StatusServer::StatusServer(EventLoop& loop, std::string path, SyncHandler handler)
    : StatusServer(loop, std::move(path), Handler([handler = std::move(handler)](const nlohmann::json& req, const Reply& reply) {
          reply(handler(req));
      })) {}

StatusServer::StatusServer(EventLoop& loop, std::string path, Handler handler)
    : loop_(loop), path_(std::move(path)), handler_(std::move(handler)) {
    auto addr = unixAddress(path_, "status socket");
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
    ::unlink(path_.c_str());
    listen_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!listen_) throwErrno("status socket " + path_ + ": socket");
    // The socket exposes node state: create it 0600 from the start (no window
    // in which it is world-accessible).
    mode_t old = ::umask(0177);
    int rc = ::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::umask(old);
    if (rc < 0) throwErrno("status socket " + path_ + ": bind");
    if (::listen(listen_.get(), 16) < 0) throwErrno("status socket " + path_ + ": listen");
    loop_.watch(listen_.get(), EPOLLIN, [this](uint32_t) { accept(); });
}

StatusServer::~StatusServer() {
    for (auto& [fd, c] : clients_) {
        loop_.unwatch(fd);  // unwatching one that is waiting for its reply is harmless
        loop_.cancel(c.deadline);
    }
    loop_.unwatch(listen_.get());
    ::unlink(path_.c_str());
}

void StatusServer::accept() {
    while (true) {
        int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        if (clients_.size() >= kMaxClients) {
            // The oldest still sending its request makes room; a client whose
            // reply is being worked on keeps its place.
            auto oldest = clients_.end();
            for (auto it = clients_.begin(); it != clients_.end(); ++it) {
                if (it->second.reading && (oldest == clients_.end() || it->second.id < oldest->second.id)) oldest = it;
            }
            if (oldest == clients_.end()) {
                ::close(fd);
                continue;
            }
            if (++evicted_ == 1 || evicted_ % 100 == 0)
                spdlog::warn("status socket {}: {} clients open; closed the oldest that sent no request ({} so far)",
                             path_, clients_.size(), evicted_);
            finish(oldest->first);
        }
        auto& c = clients_[fd];
        c.fd.reset(fd);
        c.id = ++nextClient_;
        auto id = c.id;
        c.deadline = loop_.after(kRequestTimeout, [this, fd, id] {
            auto it = clients_.find(fd);
            if (it != clients_.end() && it->second.id == id && it->second.reading) {
                it->second.deadline = 0;
                finish(fd);
            }
        });
        loop_.watch(fd, EPOLLIN, [this, fd](uint32_t) { onClient(fd); });
    }
}

void StatusServer::onClient(int fd) {
    auto& c = clients_.at(fd);
    char buf[4096];
    while (true) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            c.in.append(buf, static_cast<size_t>(n));
            if (c.in.size() > kMaxRequest) return finish(fd);
            continue;
        }
        if (n < 0 && errno == EAGAIN) break;
        break;  // EOF or error: the request is complete (or never will be)
    }
    auto nl = c.in.find('\n');
    if (nl == std::string::npos) {
        // Wait for more unless the peer already closed its side.
        char probe;
        if (::recv(fd, &probe, 1, MSG_PEEK | MSG_DONTWAIT) != 0) return;
    }
    // No more reading; the reply may come later (a handler that waits for
    // the datapath), when the client may be gone and its fd number reused:
    // the reply finds its client by id, not by fd alone.
    loop_.unwatch(fd);
    c.reading = false;
    loop_.cancel(c.deadline);
    c.deadline = 0;
    auto id = c.id;
    Reply reply = [this, fd, id](const nlohmann::json& answer) {
        auto it = clients_.find(fd);
        if (it == clients_.end() || it->second.id != id || !it->second.out.empty()) return;
        it->second.out = answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
        // Written as the socket takes it; a client that stops reading is
        // closed at the deadline instead of stalling the loop.
        it->second.deadline = loop_.after(kReplyTimeout, [this, fd, id] {
            auto c = clients_.find(fd);
            if (c != clients_.end() && c->second.id == id) {
                c->second.deadline = 0;
                finish(fd);
            }
        });
        send(fd);
    };
    try {
        std::string_view line = std::string_view(c.in).substr(0, nl);
        if (jsonNestingDepth(line) > kMaxJsonDepth) throw Error("request nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        handler_(nlohmann::json::parse(line), reply);
    } catch (const std::exception& e) {
        reply({{"error", e.what()}});
    }
}

void StatusServer::send(int fd) {
    auto& c = clients_.at(fd);
    while (!c.out.empty()) {
        ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            c.out.erase(0, static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            if (!c.writing) loop_.watch(fd, EPOLLOUT, [this, fd](uint32_t) { send(fd); });
            c.writing = true;
            return;
        }
        break;  // the client went away
    }
    finish(fd);
}

void StatusServer::finish(int fd) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    loop_.unwatch(fd);
    loop_.cancel(it->second.deadline);
    clients_.erase(it);
}

}  // namespace kovs::agent
