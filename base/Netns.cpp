#include "base/Netns.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "base/Error.hpp"

namespace kovs {

namespace {

const char* namespaceKind(int cloneFlag) {
    switch (cloneFlag) {
        case CLONE_NEWNS: return "mount";
        case CLONE_NEWPID: return "PID";
        case CLONE_NEWUSER: return "user";
        case CLONE_NEWUTS: return "UTS";
        case CLONE_NEWIPC: return "IPC";
        case CLONE_NEWCGROUP: return "cgroup";
        case CLONE_NEWTIME: return "time";
        default: return "non-network";
    }
}

}  // namespace

std::string Netns::currentPath() {
    // /proc/thread-self is the calling thread, /proc/self would be the main thread.
    return "/proc/thread-self/ns/net";
}

UniqueFd Netns::open(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throwErrno("netns " + path + ": open");
    struct statfs fs{};
    if (::fstatfs(fd.get(), &fs) < 0) throwErrno("netns " + path + ": fstatfs");
    // A bind-mounted netns lives on nsfs; anything else (a plain file, a
    // directory) would make setns fail with a less helpful EINVAL.
    if (static_cast<unsigned long>(fs.f_type) != NSFS_MAGIC) {
        throw Error("netns " + path + ": not a network namespace file");
    }
    // Every namespace lives on nsfs: a mount, PID or user namespace (say
    // /proc/self/ns/mnt) would pass the check above and fail only at setns,
    // after a caller may already have acted on the path.
    int type = ::ioctl(fd.get(), NS_GET_NSTYPE);
    if (type < 0) throwErrno("netns " + path + ": NS_GET_NSTYPE");
    if (type != CLONE_NEWNET) throw Error("netns " + path + ": a " + namespaceKind(type) + " namespace, not a network namespace");
    return fd;
}

ino_t Netns::currentInode() {
    struct stat st{};
    if (::stat(currentPath().c_str(), &st) < 0) throwErrno("netns " + currentPath() + ": stat");
    return st.st_ino;
}

Netns::Netns(const std::string& path) : path_(path), thread_(std::this_thread::get_id()) {
    original_ = open(currentPath());
    UniqueFd target = open(path);
    if (::setns(target.get(), CLONE_NEWNET) < 0) throwErrno("netns " + path + ": setns");
}

Netns::~Netns() {
    if (std::this_thread::get_id() != thread_) {
        std::fprintf(stderr, "kovs: Netns %s destroyed on another thread\n", path_.c_str());
        std::abort();
    }
    if (::setns(original_.get(), CLONE_NEWNET) < 0) {
        std::perror(("kovs: netns " + path_ + ": setns back to the original namespace").c_str());
        std::abort();
    }
}

}  // namespace kovs
