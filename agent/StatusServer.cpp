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
    for (auto& [fd, _] : clients_) loop_.unwatch(fd);  // unwatching one that is waiting for its reply is harmless
    loop_.unwatch(listen_.get());
    ::unlink(path_.c_str());
}

void StatusServer::accept() {
    while (true) {
        int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        auto& c = clients_[fd];
        c.fd.reset(fd);
        c.id = ++nextClient_;
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
    auto id = c.id;
    Reply reply = [this, fd, id](const nlohmann::json& answer) {
        auto it = clients_.find(fd);
        if (it == clients_.end() || it->second.id != id) return;
        std::string out = answer.dump() + "\n";
        // Replies are small; a blocking write with a client that stopped
        // reading could stall the loop, so give up on a short write.
        [[maybe_unused]] auto w = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        clients_.erase(it);
    };
    try {
        std::string_view line = std::string_view(c.in).substr(0, nl);
        if (jsonNestingDepth(line) > kMaxJsonDepth) throw Error("request nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        handler_(nlohmann::json::parse(line), reply);
    } catch (const std::exception& e) {
        reply({{"error", e.what()}});
    }
}

void StatusServer::finish(int fd) {
    loop_.unwatch(fd);
    clients_.erase(fd);
}

}  // namespace kovs::agent
