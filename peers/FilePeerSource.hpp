#pragma once
#include <memory>
#include <optional>
#include <string>

#include "base/DirectoryWatch.hpp"
#include "base/EventLoop.hpp"
#include "peers/PeerSource.hpp"

namespace kovs::peers {

// Peers from a YAML/JSON file (format in PeerFile.hpp), reloaded when it
// changes (a DirectoryWatch: editors and ConfigMap mounts replace the file
// by an atomic rename). A missing or invalid file is logged and the last
// good set is kept.
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
    void reload();

    EventLoop& loop_;
    std::string path_;
    std::unique_ptr<DirectoryWatch> watch_;
    Callback onPeers_;
    std::optional<PeerSet> last_;
    size_t failedReloads_ = 0;
};

}  // namespace kovs::peers
