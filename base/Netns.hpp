#pragma once
// Entering a pod's network namespace. setns(2) switches the namespace of the
// calling *thread* only, so a Netns is thread-bound: create and destroy it on
// the same thread (the agent does its netns work on its event loop thread;
// kovs-cni is single-threaded). Sockets keep the namespace they were created
// in, so open netlink/ethtool sockets while a Netns is alive.
#include <sys/types.h>

#include <string>
#include <thread>

#include "base/UniqueFd.hpp"

namespace kovs {

class Netns {
public:
    // Throws an Error naming `path` when it cannot be opened or entered; the
    // thread is then still in its original namespace.
    explicit Netns(const std::string& path);
    // Returns to the original namespace. Failing to do so aborts the process:
    // carrying on in a pod's namespace would apply host changes to the pod.
    ~Netns();
    Netns(const Netns&) = delete;
    Netns& operator=(const Netns&) = delete;

    const std::string& path() const { return path_; }

    // An O_RDONLY|O_CLOEXEC fd of the netns at `path` (a /proc/<pid>/ns/net or
    // a bind mount such as /run/netns/<name>); checks it really is a netns.
    static UniqueFd open(const std::string& path);
    // The inode of the calling thread's current netns (identity for tests and logs).
    static ino_t currentInode();
    // The netns file of the calling thread.
    static std::string currentPath();

private:
    std::string path_;
    UniqueFd original_;
    std::thread::id thread_;
};

}  // namespace kovs
