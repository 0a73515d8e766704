#include "peers/FilePeerSource.hpp"

#include <sys/inotify.h>

#include <filesystem>

#include "base/Error.hpp"
#include "base/Log.hpp"
#include "peers/PeerFile.hpp"

namespace kovs::tunnel {

FilePeerSource::FilePeerSource(EventLoop& loop, std::string path) : loop_(loop), path_(std::move(path)) {
    std::filesystem::path p(path_);
    dir_ = p.parent_path().empty() ? "." : p.parent_path().string();
    base_ = p.filename().string();
    if (base_.empty()) throw Error("peer file '" + path_ + "': not a file path");
}

FilePeerSource::~FilePeerSource() { stop(); }

void FilePeerSource::start(Callback onPeers) {
    if (inotify_) throw Error("peer file " + path_ + ": already started");
    UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!fd) throwErrno("inotify_init1 for peer file " + path_);
    if (::inotify_add_watch(fd.get(), dir_.c_str(),
                            IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE) < 0) {
        throwErrno("inotify_add_watch " + dir_ + " (peer file " + path_ + ")");
    }
    inotify_ = std::move(fd);
    onPeers_ = std::move(onPeers);
    loop_.watch(inotify_.get(), EPOLLIN, [this](uint32_t) { onInotify(); });
    reload();
}

void FilePeerSource::stop() {
    if (!inotify_) return;
    loop_.unwatch(inotify_.get());
    inotify_.reset();
    onPeers_ = nullptr;
}

void FilePeerSource::onInotify() {
    alignas(inotify_event) char buf[4096];
    bool ours = false;
    while (true) {
        ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
        if (n <= 0) break;
        for (char* p = buf; p < buf + n;) {
            auto* ev = reinterpret_cast<inotify_event*>(p);
            if (ev->len > 0 && base_ == ev->name) ours = true;
            if (ev->mask & IN_Q_OVERFLOW) ours = true;
            p += sizeof(inotify_event) + ev->len;
        }
    }
    if (ours) reload();
}

void FilePeerSource::reload() {
    PeerSet peers;
    try {
        peers = readPeerFile(path_);
    } catch (const Error& e) {
        spdlog::error("{}; keeping the last good peer set", e.what());
        ++failedReloads_;
        return;
    }
    if (last_ && *last_ == peers) return;
    last_ = peers;
    spdlog::info("peer file {}: {} peers", path_, peers.size());
    if (onPeers_) onPeers_(*last_);
}

}  // namespace kovs::tunnel
