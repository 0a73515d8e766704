#pragma once
#include <optional>
#include <string>

#include "base/EventLoop.hpp"
#include "base/UniqueFd.hpp"
#include "peers/PeerSource.hpp"

namespace kovs::tunnel {

// Peers from a YAML/JSON file (format in PeerFile.hpp), reloaded when it
// changes. inotify watches the *directory*, not the file: editors and
// ConfigMap mounts replace the file by an atomic rename, which would leave a
// watch on the old inode deaf. A missing or invalid file is logged and the
// last good set is kept.
class FilePeerSource : public PeerSource {
public:
    FilePeerSource(EventLoop& loop, std::string path);
    ~FilePeerSource() override;

    // Throws when the directory cannot be watched. Reports the current set
    // synchronously when the file is valid.
    void start(Callback onPeers) override;
    void stop() override;

    // Reloads that failed (unreadable or invalid file) so far; for status and tests.
    size_t failedReloads() const { return failedReloads_; }

private:
    void onInotify();
    void reload();

    EventLoop& loop_;
    std::string path_;
    std::string dir_;
    std::string base_;
    UniqueFd inotify_;
    Callback onPeers_;
    std::optional<PeerSet> last_;
    size_t failedReloads_ = 0;
};

}  // namespace kovs::tunnel
