#include "daemons/PacketSocketBuffers.hpp"

#include <net/if.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/Error.hpp"
#include "base/Pidfile.hpp"
#include "base/UniqueFd.hpp"

namespace kovs::daemons {
namespace {

// inode -> ifindex of every AF_PACKET socket in `pid`'s network namespace.
std::map<unsigned long, int> packetSocketInodes(pid_t pid) {
    std::string path = "/proc/" + std::to_string(pid) + "/net/packet";
    std::ifstream in(path);
    if (!in) throw Error(path + ": cannot read (is pid " + std::to_string(pid) + " running?)");
    std::map<unsigned long, int> out;
    std::string line;
    std::getline(in, line);  // "sk RefCnt Type Proto Iface R Rmem User Inode"
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string sk, ref, type, proto, rflag, rmem, user;
        int ifindex = 0;
        unsigned long inode = 0;
        if (f >> sk >> ref >> type >> proto >> ifindex >> rflag >> rmem >> user >> inode) out[inode] = ifindex;
    }
    return out;
}

int getInt(int fd, int opt) {
    int v = 0;
    socklen_t len = sizeof v;
    getsockopt(fd, SOL_SOCKET, opt, &v, &len);
    return v;
}

UniqueFd openPidfd(pid_t pid) {
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd) throwErrno("pidfd_open(" + std::to_string(pid) + ")");
    return pidfd;
}

// vswitchd's fd `remote` duplicated into this process (the same socket
// object), or an empty fd when it no longer is the socket `inode`: vswitchd
// may have closed that fd number and reused it since the listing (ports come
// and go exactly when this runs), and only the socket that was read is ours
// to touch.
UniqueFd duplicateSocket(int pidfd, pid_t pid, int remote, unsigned long inode) {
    UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, remote, 0)));
    if (!fd) {
        if (errno == EBADF) return fd;  // closed since the listing
        int err = errno;
        std::string what = "pidfd_getfd(pid " + std::to_string(pid) + ", fd " + std::to_string(remote) + ")";
        if (err == EPERM)
            what += " (needs ptrace access to ovs-vswitchd: the same capabilities as it or CAP_SYS_PTRACE, and a "
                    "seccomp profile allowing pidfd_getfd; Docker's default allows it only with CAP_SYS_PTRACE)";
        throw SystemError(what, err);
    }
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != inode) return UniqueFd();
    return fd;
}

}  // namespace

std::vector<PacketSocketInfo> packetSockets(pid_t pid) {
    std::vector<PacketSocketInfo> out;
    auto inodes = packetSocketInodes(pid);
    if (inodes.empty()) return out;
    auto pidfd = openPidfd(pid);
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
        std::error_code gone;  // the fd was closed since the listing
        auto target = std::filesystem::read_symlink(entry.path(), gone).string();
        unsigned long inode = 0;
        if (gone || std::sscanf(target.c_str(), "socket:[%lu]", &inode) != 1 || !inodes.count(inode)) continue;
        int remote = std::stoi(entry.path().filename().string());
        auto fd = duplicateSocket(pidfd.get(), pid, remote, inode);
        if (!fd) continue;
        char name[IF_NAMESIZE] = "";
        int ifindex = inodes[inode];
        if (ifindex > 0 && !if_indextoname(static_cast<unsigned>(ifindex), name)) name[0] = '\0';
        out.push_back({name, getInt(fd.get(), SO_RCVBUF), getInt(fd.get(), SO_SNDBUF), remote, inode});
    }
    if (ec) throw SystemError("/proc/" + std::to_string(pid) + "/fd", ec.value());
    return out;
}

std::vector<PacketSocketInfo> undersizedSockets(const std::vector<PacketSocketInfo>& sockets, int bytes) {
    std::vector<PacketSocketInfo> out;
    for (const auto& s : sockets) {
        if (s.rcvbuf < bytes || s.sndbuf < bytes) out.push_back(s);
    }
    return out;
}

int resizePacketSockets(pid_t vswitchd, const std::vector<PacketSocketInfo>& sockets, int bytes) {
    if (sockets.empty()) return 0;
    auto pidfd = openPidfd(vswitchd);
    int resized = 0;
    for (const auto& s : sockets) {
        auto fd = duplicateSocket(pidfd.get(), vswitchd, s.fd, s.inode);
        if (!fd) continue;  // gone since it was observed: the next pass sees its successor
        bool grew = false;
        for (auto [get, force] : {std::pair{SO_RCVBUF, SO_RCVBUFFORCE}, {SO_SNDBUF, SO_SNDBUFFORCE}}) {
            if (getInt(fd.get(), get) >= bytes) continue;
            int half = bytes / 2;
            if (setsockopt(fd.get(), SOL_SOCKET, force, &half, sizeof half) != 0) throwErrno("setsockopt(SO_*BUFFORCE)");
            grew = true;
        }
        resized += grew;
    }
    return resized;
}

pid_t vswitchdPid(const std::string& rundir) { return Pidfile(rundir + "/ovs-vswitchd.pid").requireLive("ovs-vswitchd"); }

PacketSocketResult sizePacketSocketBuffers(pid_t vswitchd, int bytes) {
    auto sockets = packetSockets(vswitchd);
    bool send = std::any_of(sockets.begin(), sockets.end(), [](const PacketSocketInfo& s) { return s.ifname.empty(); });
    return {static_cast<int>(sockets.size()), resizePacketSockets(vswitchd, undersizedSockets(sockets, bytes), bytes), send};
}

}  // namespace kovs::daemons
