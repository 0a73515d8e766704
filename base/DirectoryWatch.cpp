#include "base/DirectoryWatch.hpp"

#include <sys/inotify.h>

#include <filesystem>

#include "base/Error.hpp"
#include "base/Strings.hpp"

namespace kovs {

namespace {

std::string parentOf(const std::string& path) {
    std::filesystem::path p(path);
    if (p.filename().empty()) throw Error("watch '" + path + "': not a file path");
    return p.parent_path().empty() ? "." : p.parent_path().string();
}

}  // namespace

DirectoryWatch::DirectoryWatch(EventLoop& loop, const std::string& path, std::function<void()> onChange)
    : DirectoryWatch(loop, parentOf(path), {std::filesystem::path(path).filename().string()}, std::move(onChange)) {}

DirectoryWatch::DirectoryWatch(EventLoop& loop, std::string dir, std::set<std::string> names, std::function<void()> onChange)
    : loop_(loop), dir_(std::move(dir)), names_(std::move(names)), onChange_(std::move(onChange)) {
    fd_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!fd_) throwErrno("inotify_init1 to watch " + dir_);
    if (::inotify_add_watch(fd_.get(), dir_.c_str(),
                            IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE) < 0)
        throwErrno("inotify_add_watch " + dir_ + " (to watch " + join(names_) + ")");
    loop_.watch(fd_.get(), EPOLLIN, [this](uint32_t) { onEvents(); });
}

DirectoryWatch::~DirectoryWatch() { loop_.unwatch(fd_.get()); }

void DirectoryWatch::onEvents() {
    alignas(inotify_event) char buf[4096];
    bool ours = false;
    ssize_t n;
    while ((n = ::read(fd_.get(), buf, sizeof buf)) > 0) {
        for (char* p = buf; p < buf + n;) {
            auto* ev = reinterpret_cast<inotify_event*>(p);
            if ((ev->len > 0 && names_.count(ev->name)) || (ev->mask & IN_Q_OVERFLOW)) ours = true;
            p += sizeof(inotify_event) + ev->len;
        }
    }
    if (ours) onChange_();  // may destroy this watch: nothing after it
}

}  // namespace kovs
