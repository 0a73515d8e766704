#pragma once
// Sizes ovs-vswitchd's AF_PACKET socket buffers from outside the process.
//
// The userspace datapath reads every `system` port (pod veths, the uplink)
// through an AF_PACKET socket that OVS 3.1 leaves at the kernel default of
// 208 KiB. A TCP burst overflows it, and the drops came back as 30,000-60,000
// retransmits per 5 s of iperf3 across nodes. OVS has no setting for it and
// net.core.rmem_default is host-wide, so the agent resizes vswitchd's own
// sockets: pidfd_getfd(2) duplicates each one into the agent (the same socket
// object), and SO_RCVBUFFORCE / SO_SNDBUFFORCE on the duplicate changes it
// for OVS. Measured: retransmits to ~0 and 1.5x pod-to-pod throughput at MTU
// 1500, 2.2x at 9000 (docs/benchmarks.md).
//
// Needs CAP_NET_ADMIN, and ptrace access to vswitchd (root with
// CAP_SYS_PTRACE, or vswitchd's parent without Yama restrictions). OVS opens
// a new socket, at the default size, for every port it adds and after every
// restart: apply() is idempotent and cheap, call it on port changes and on
// every resync.
#include <sys/types.h>

#include <string>
#include <vector>

namespace kovs::daemons {

// What getsockopt() reports for one AF_PACKET socket of vswitchd, by
// interface name ("" for unbound sockets), and where it is in vswitchd.
struct PacketSocketInfo {
    std::string ifname;
    int rcvbuf = 0;
    int sndbuf = 0;
    int fd = -1;              // vswitchd's fd number
    unsigned long inode = 0;  // the socket's identity: the fd number may be reused
};

struct PacketSocketResult {
    int sockets = 0;  // AF_PACKET sockets vswitchd holds
    int resized = 0;  // of which this call enlarged
    // The unbound socket vswitchd sends through every system port on is
    // there (it opens it at its first transmit).
    bool sendSocket = false;
};

// The pid in <rundir>/ovs-vswitchd.pid, checked to be an ovs-vswitchd in
// this pid namespace (next to Antrea, vswitchd runs in another container and
// its pidfile names a pid of that container's namespace). Throws kovs::Error.
pid_t vswitchdPid(const std::string& rundir);

// The job's observe -> plan -> apply (kovsctl doctor runs the first two):
// every AF_PACKET socket of `pid`; the ones whose buffers are below `bytes`
// (pure); those enlarged so getsockopt() reports `bytes` for both buffers
// (the kernel doubles what is set, so half of it is requested), returning how
// many grew. Throws kovs::Error when the sockets cannot be reached (no such
// process, EPERM from pidfd_getfd...).
std::vector<PacketSocketInfo> packetSockets(pid_t pid);
std::vector<PacketSocketInfo> undersizedSockets(const std::vector<PacketSocketInfo>& sockets, int bytes);
int resizePacketSockets(pid_t vswitchd, const std::vector<PacketSocketInfo>& sockets, int bytes);
// All three in one pass.
PacketSocketResult sizePacketSocketBuffers(pid_t vswitchd, int bytes);

}  // namespace kovs::daemons
