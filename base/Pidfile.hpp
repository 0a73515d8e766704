#pragma once
// A daemon's pidfile (<rundir>/ovs-vswitchd.pid), read one way everywhere:
// the unixctl client (which socket to open), the OVS supervisor (adopt a
// running daemon), the tunnel job (a restart means re-programming) and the
// socket-buffer sizer (whose sockets to reach).
#include <sys/types.h>

#include <optional>
#include <string>

namespace kovs {

class Pidfile {
public:
    explicit Pidfile(std::string path) : path_(std::move(path)) {}
    const std::string& path() const { return path_; }

    // The pid written in it; nullopt when the file is missing, empty or not
    // a positive number (a daemon writes it after it started: a reader can
    // see it half-written).
    std::optional<pid_t> read() const;

    // read(), when that pid is a live process named `comm` in this pid
    // namespace. Pids are reused, and next to Antrea vswitchd runs in
    // another container whose pids mean nothing here.
    std::optional<pid_t> readLive(const std::string& comm) const;
    // Like readLive, but throws kovs::Error saying why not ("...: pid 12 is
    // 'bash' here, not ovs-vswitchd (does it run in another pid namespace?)").
    pid_t requireLive(const std::string& comm) const;

private:
    std::string path_;
};

// /proc/<pid>/comm ("" when there is no such process); at most 15 characters.
std::string processName(pid_t pid);

}  // namespace kovs
