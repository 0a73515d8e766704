#include "peers/FilePeerSource.hpp"

#include <filesystem>

#include "base/Error.hpp"
#include "base/Log.hpp"
#include "peers/PeerFile.hpp"

namespace kovs::peers {

FilePeerSource::FilePeerSource(EventLoop& loop, std::string path) : loop_(loop), path_(std::move(path)) {
    if (std::filesystem::path(path_).filename().empty()) throw Error("peer file '" + path_ + "': not a file path");
}

FilePeerSource::~FilePeerSource() { stop(); }

void FilePeerSource::start(Callback onPeers) {
    if (watch_) throw Error("peer file " + path_ + ": already started");
    try {
        watch_ = std::make_unique<DirectoryWatch>(loop_, path_, [this] { reload(); });
    } catch (const Error& e) {
        throw Error(std::string(e.what()) + " (peer file " + path_ + ")");
    }
    onPeers_ = std::move(onPeers);
    reload();
}

void FilePeerSource::stop() {
    watch_.reset();
    onPeers_ = nullptr;
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
    if (onPeers_) onPeers_(*last_, {});
}

}  // namespace kovs::peers
