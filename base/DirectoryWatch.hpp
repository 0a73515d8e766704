#pragma once
// Tells the loop when one file in a directory changes: created, written,
// renamed into or out of place, removed. inotify watches the *directory*,
// not the file: editors, ConfigMap mounts and daemons writing pidfiles
// replace a file by an atomic rename, which leaves a watch on the old inode
// deaf, and a file that does not exist yet has no inode to watch.
#include <functional>
#include <set>
#include <string>

#include "base/EventLoop.hpp"
#include "base/UniqueFd.hpp"

namespace kovs {

class DirectoryWatch {
public:
    // onChange runs on the loop, once per batch of events about `fileName`
    // (and when the kernel's event queue overflowed, since events were lost).
    // Throws kovs::Error naming the directory when it cannot be watched.
    DirectoryWatch(EventLoop& loop, const std::string& path, std::function<void()> onChange);
    // The same for any of `names` in `dir`.
    DirectoryWatch(EventLoop& loop, std::string dir, std::set<std::string> names, std::function<void()> onChange);
    ~DirectoryWatch();
    DirectoryWatch(const DirectoryWatch&) = delete;
    DirectoryWatch& operator=(const DirectoryWatch&) = delete;

    const std::string& directory() const { return dir_; }
    const std::set<std::string>& fileNames() const { return names_; }

private:
    void onEvents();

    EventLoop& loop_;
    std::string dir_;
    std::set<std::string> names_;
    UniqueFd fd_;
    std::function<void()> onChange_;
};

}  // namespace kovs
