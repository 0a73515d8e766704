#include "ctl/Doctor.hpp"

#include <fmt/format.h>
#include <net/if.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/IpPrefix.hpp"
#include "gateway/NetworkdDropins.hpp"
#include "agent/NetworkdInterfaces.hpp"
#include "base/UnixJsonRequest.hpp"
#include "base/Netlink.hpp"
#include "ovs/OvsdbClient.hpp"
#include "ovs/PacketSocketBuffers.hpp"
#include "ovs/UnixctlClient.hpp"
#include "base/Ethtool.hpp"
#include "base/Netns.hpp"
#include "cni/PodPorts.hpp"
#include "peers/PeerFile.hpp"
#include "tunnel/NeighbourTable.hpp"
#include "tunnel/OvsTunnelState.hpp"
#include "tunnel/TunnelPlanner.hpp"

namespace kovs {
namespace {

using Status = DoctorCheck::Status;

DoctorCheck ok(std::string id, std::string detail) { return {std::move(id), Status::Ok, std::move(detail), ""}; }
DoctorCheck fail(std::string id, std::string detail, std::string hint) {
    return {std::move(id), Status::Fail, std::move(detail), std::move(hint)};
}
DoctorCheck skipped(std::string id, std::string why) { return {std::move(id), Status::Skipped, std::move(why), ""}; }

// Addresses of one interface in this netns, as "addr/plen".
std::vector<std::string> addressesOf(nl_sock* sock, int ifindex) {
    nl_cache* raw = nullptr;
    nl::check(rtnl_addr_alloc_cache(sock, &raw), "dump addresses");
    nl::Cache cache(raw);
    std::vector<std::string> out;
    for (auto* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* a = reinterpret_cast<rtnl_addr*>(o);
        if (rtnl_addr_get_ifindex(a) == ifindex) out.push_back(nl::toString(rtnl_addr_get_local(a)));
    }
    return out;
}

bool hasRouteTo(nl_sock* sock, int ifindex, const std::string& dst) {
    nl_cache* raw = nullptr;
    nl::check(rtnl_route_alloc_cache(sock, AF_UNSPEC, 0, &raw), "dump routes");
    nl::Cache cache(raw);
    for (auto* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* r = reinterpret_cast<rtnl_route*>(o);
        if (rtnl_route_get_table(r) != RT_TABLE_MAIN || nl::toString(rtnl_route_get_dst(r)) != dst) continue;
        // Any next hop will do: a multipath route also reaches gw0.
        for (int i = 0; i < rtnl_route_get_nnexthops(r); ++i) {
            if (rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(r, i)) == ifindex) return true;
        }
    }
    return false;
}

}  // namespace

Doctor::Doctor(Config config) : config_(std::move(config)) {
    try {
        resolveUplinkMtu(config_);
    } catch (const Error&) {
        // A gateway.mtu too large for the uplink: the mtu check reports what the devices have.
    }
}

std::vector<DoctorCheck> Doctor::run() {
    std::vector<DoctorCheck> out;
    checkAgent(out);
    checkOvs(out);
    checkTxChecksum(out);
    checkGateway(out);
    checkPeers(out);
    checkNetworkd(out);
    return out;
}

void Doctor::checkAgent(std::vector<DoctorCheck>& out) {
    try {
        // Short: doctor is most needed when the agent is hung.
        agentStatus_ = unixJsonRequest(config_.statusSocket, {{"command", "status"}}, 2000);
        out.push_back(ok("agent", "kovs-agent answers on " + config_.statusSocket));
    } catch (const std::exception& e) {
        agentStatus_ = nullptr;
        out.push_back(fail("agent", e.what(), "start kovs-agent (in kind: kubectl -n kovs-system logs ds/kovs-agent)"));
    }
}

void Doctor::checkOvs(std::vector<DoctorCheck>& out) {
    auto remote = config_.ovsdbRemote();
    try {
        EventLoop loop;
        OvsdbClientOptions o;
        o.remote = remote;
        o.monitorTables = {};
        OvsdbClient db(loop, o);
        db.start();
        if (!db.waitReady(std::chrono::seconds(3))) throw Error("ovsdb " + remote + ": not reachable within 3 s");
        ovsReachable_ = true;
        out.push_back(ok("ovsdb", "ovsdb-server answers on " + remote));

        std::vector<std::string> bridges{config_.bridge.integration};
        if (config_.uplink.mode != Config::UplinkMode::None) bridges.push_back(config_.bridge.physical);
        for (const auto& name : bridges) {
            ovsdb::Transaction t;
            t.select("Bridge", ovsdb::whereName(name), {"datapath_type"}, name);
            auto rows = db.transactSync(t).at(0).at("rows");
            if (rows.empty()) {
                out.push_back(fail("datapath-type", "bridge " + name + " does not exist",
                                   "kovs-agent creates it; check the agent log for OVSDB errors"));
            } else if (auto dp = ovsdb::stringOr(rows[0], "datapath_type"); dp != "netdev") {
                out.push_back(fail("datapath-type", fmt::format("bridge {} has datapath_type '{}'", name, dp),
                                   fmt::format("without the OVS kernel module only netdev works: ovs-vsctl set bridge {} datapath_type=netdev", name)));
            } else {
                out.push_back(ok("datapath-type", "bridge " + name + " uses the userspace (netdev) datapath"));
            }
        }
        cni::PodPorts ports(db, config_.bridge.integration);
        podPorts_ = nlohmann::json::array();
        for (const auto& p : ports.list()) {
            podPorts_.push_back({{"port", p.name}, {"netns", p.ids.netns}, {"ifname", p.ids.ifname},
                                 {"pod", p.ids.podNamespace + "/" + p.ids.podName}});
        }
    } catch (const std::exception& e) {
        out.push_back(fail("ovsdb", e.what(), "start ovsdb-server, or set ovs.manage: true so the agent runs it"));
    }
    try {
        BlockingUnixctlClient ctl(config_.ovs.rundir);
        ctl.call("version");
        out.push_back(ok("vswitchd", fmt::format("ovs-vswitchd answers (pid {})", ctl.pid())));
        checkSocketBuffers(out);
    } catch (const std::exception& e) {
        out.push_back(fail("vswitchd", e.what(), "start ovs-vswitchd, or set ovs.manage: true so the agent runs it"));
    }
}

void Doctor::checkSocketBuffers(std::vector<DoctorCheck>& out) {
    if (config_.ovs.socketBufferKiB == 0) {
        out.push_back(skipped("socket-buffers", "ovs.socketBufferKiB is 0: vswitchd's packet sockets keep the kernel default"));
        return;
    }
    std::vector<PacketSocketInfo> sockets;
    try {
        sockets = packetSockets(vswitchdPid(config_.ovs.rundir));
    } catch (const std::exception& e) {
        out.push_back(skipped("socket-buffers", std::string("cannot inspect vswitchd's packet sockets: ") + e.what()));
        return;
    }
    std::string small;
    for (const auto& s : sockets) {
        if (s.rcvbuf < config_.ovs.socketBufferKiB * 1024)
            small += fmt::format("{}{} ({} KiB)", small.empty() ? "" : ", ", s.ifname.empty() ? "send socket" : s.ifname,
                                 s.rcvbuf / 1024);
    }
    if (small.empty()) {
        out.push_back(ok("socket-buffers", fmt::format("all {} of vswitchd's packet sockets have {} KiB buffers",
                                                      sockets.size(), config_.ovs.socketBufferKiB)));
    } else {
        out.push_back(fail("socket-buffers", "vswitchd packet sockets below " + std::to_string(config_.ovs.socketBufferKiB) +
                                                 " KiB, which TCP bursts overflow: " + small,
                           "kovs-agent sizes them on every port change and resync; `kovsctl status` shows why it "
                           "could not under socketBuffers (EPERM: grant SYS_PTRACE, docs/kind.md)"));
    }
}

void Doctor::checkTxChecksum(std::vector<DoctorCheck>& out) {
    const std::string hint = "the userspace datapath drops TCP with checksum offload on; run: ethtool -K {} tx off "
                             "(kovs-agent repairs this by itself; is it running?)";
    std::vector<std::string> hostDevices{config_.bridge.gateway};
    if (config_.uplink.mode != Config::UplinkMode::None) hostDevices.push_back(config_.bridge.physical);
    Ethtool host;
    size_t checked = 0;
    for (const auto& dev : hostDevices) {
        try {
            if (host.txChecksum(dev)) {
                out.push_back(fail("tx-checksum", dev + ": TX checksum offload is on", fmt::format(fmt::runtime(hint), dev)));
            } else {
                ++checked;
            }
        } catch (const std::exception& e) {
            out.push_back(fail("tx-checksum", e.what(), "the device is missing; kovs-agent creates it"));
        }
    }
    for (const auto& p : podPorts_) {
        std::string pod = p["pod"], netns = p["netns"], ifname = p["ifname"];
        try {
            Netns enter(netns);
            Ethtool inPod;
            if (inPod.txChecksum(ifname)) {
                out.push_back(fail("tx-checksum", fmt::format("pod {} ({} in {}): TX checksum offload is on", pod, ifname, netns),
                                   fmt::format(fmt::runtime(hint), "(inside the pod: nsenter --net=" + netns + ") " + ifname)));
            } else {
                ++checked;
            }
        } catch (const std::exception& e) {
            out.push_back(fail("tx-checksum", fmt::format("pod {}: {}", pod, e.what()),
                               "a pod port whose netns is gone: CNI DEL was missed; kovs-cni GC removes it"));
        }
    }
    if (std::none_of(out.begin(), out.end(), [](const auto& c) { return c.id == "tx-checksum"; })) {
        out.push_back(ok("tx-checksum", fmt::format("TX checksum offload is off on all {} devices checked", checked)));
    }
}

void Doctor::checkGateway(std::vector<DoctorCheck>& out) {
    const auto& gw = config_.bridge.gateway;
    int ifindex = static_cast<int>(::if_nametoindex(gw.c_str()));
    if (ifindex == 0) {
        out.push_back(fail("gateway", gw + " does not exist", "kovs-agent creates it as an OVS internal port; check the agent log"));
        return;
    }
    auto sock = nl::connectRoute();
    std::vector<IpPrefix> want;
    if (config_.gateway.addresses.empty()) {
        if (!config_.node.podCIDR.empty()) want.push_back(gatewayAddressFor(config_.node.podCIDR));
    } else {
        for (const auto& a : config_.gateway.addresses) want.push_back(IpPrefix::parse(a));
    }
    auto have = addressesOf(sock.get(), ifindex);
    std::vector<std::string> problems;
    for (const auto& w : want) {
        if (std::find(have.begin(), have.end(), w.str()) == have.end()) problems.push_back("address " + w.str() + " missing");
        else if (!hasRouteTo(sock.get(), ifindex, w.network().str())) problems.push_back("route " + w.network().str() + " missing");
    }
    std::ifstream mtuFile("/sys/class/net/" + gw + "/mtu");
    int mtu = 0;
    mtuFile >> mtu;
    if (problems.empty()) {
        out.push_back(ok("gateway", fmt::format("{} has its addresses and pod-CIDR routes", gw)));
    } else {
        std::string all;
        for (const auto& p : problems) all += (all.empty() ? "" : ", ") + p;
        out.push_back(fail("gateway", gw + ": " + all,
                           "the gateway guard restores these within milliseconds; is gateway.guard on and the agent running?"));
    }
    // br-phy carries the tunnel; without it (uplink.mode none) trust the config.
    int uplinkMtu = 0;
    std::ifstream phy("/sys/class/net/" + config_.bridge.physical + "/mtu");
    if (!(phy >> uplinkMtu)) uplinkMtu = config_.uplink.mtu;
    if (mtu + 50 > uplinkMtu) {
        out.push_back(fail("mtu", fmt::format("{} MTU {} + 50 bytes of VXLAN exceeds the uplink MTU {}", gw, mtu, uplinkMtu),
                           fmt::format("set gateway.mtu (and the CNI mtu) to at most {}", uplinkMtu - 50)));
    } else {
        out.push_back(ok("mtu", fmt::format("{} MTU {} fits the tunnel over a {}-byte uplink", gw, mtu, uplinkMtu)));
    }
}

// The peers this node should have tunnel entries for: the agent's view, or
// when it does not answer (stopped, hung, crash-looping) the peer file it reads.
std::optional<std::vector<std::pair<std::string, std::string>>> Doctor::knownPeers(std::string& origin) const {
    std::vector<std::pair<std::string, std::string>> peers;  // (name, node IP)
    if (!agentStatus_.is_null() && agentStatus_.contains("peers")) {
        origin = "the agent";
        for (const auto& p : agentStatus_["peers"]) peers.emplace_back(p.value("name", ""), p.value("nodeIP", ""));
        return peers;
    }
    if (config_.peers.source != Config::PeerSourceKind::File) return std::nullopt;
    origin = config_.peers.file + " (the agent did not answer)";
    for (const auto& [name, peer] : tunnel::readPeerFile(config_.peers.file)) {
        if (name != config_.node.name) peers.emplace_back(name, peer.nodeIP);
    }
    return peers;
}

// A dry run of the tunnel job: observe as it does, plan with no memory of
// earlier passes; every step of the plan is something vswitchd lacks.
void Doctor::checkPeers(std::vector<DoctorCheck>& out) {
    std::string origin;
    std::optional<std::vector<std::pair<std::string, std::string>>> peers;
    try {
        peers = knownPeers(origin);
    } catch (const std::exception& e) {
        out.push_back(fail("peers", e.what(), "fix the peer file; kovs-agent logs the same error"));
        return;
    }
    if (!peers) {
        out.push_back(skipped("peers", "the agent did not answer and peers come from the Kubernetes API: peer list unknown"));
        return;
    }
    const auto& bridge = config_.bridge.physical;
    tunnel::TunnelDesired desired{bridge, {}};
    for (const auto& [name, ip] : *peers) desired.peerIPs.insert(ip);
    tunnel::TunnelObserved observed;
    try {
        auto shown = BlockingUnixctlClient(config_.ovs.rundir).pipeline(tunnel::ovsTunnelReadBack());
        observed.vswitchdPid = shown.pid;
        observed.ovs = tunnel::parseOvsTunnelReadBack(shown, bridge);
    } catch (const std::exception& e) {
        out.push_back(skipped("peers", std::string("ovs-vswitchd not reachable: ") + e.what()));
        return;
    }
    try {
        observed.kernelMacs = tunnel::KernelNeighbourTable().resolved(bridge);
    } catch (const std::exception&) {
        // No bridge, no MACs: every peer then shows up without a neighbour.
    }
    auto gaps = tunnel::gapsOf(desired, tunnel::planTunnel(desired, observed, {}));
    auto join = [](const std::vector<std::string>& v, const char* sep) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
        return s;
    };
    const std::string byAgent = "kovs-agent's tunnel job repairs this on its next pass (is it running?); by hand: ";
    size_t failed = 0;
    for (const auto& [name, ip] : *peers) {
        auto g = gaps.find(ip);
        if (g == gaps.end()) continue;
        ++failed;
        out.push_back(fail("peers", fmt::format("peer {} ({}): {}", name, ip, join(g->second.why, ", ")),
                           byAgent + join(g->second.fixes, "; ")));
        gaps.erase(g);
    }
    for (const auto& [ip, gap] : gaps) {  // routes to IPs that are no peer
        ++failed;
        out.push_back(fail("peers", join(gap.why, ", "), byAgent + join(gap.fixes, "; ")));
    }
    if (failed == 0)
        out.push_back(ok("peers", fmt::format("all {} peers (from {}) have an OVS route and a tunnel neighbour with "
                                              "the kernel's MAC",
                                              peers->size(), origin)));
}

// Whether systemd-networkd manages links in this network namespace: a
// networkd process we can see in it, or (where the node's processes are not
// visible, as in kind's agent pod without hostPID) networkd's state file under
// /run/systemd/netif, which the kind manifests mount from the node. Another
// namespace's networkd cannot touch our links.
static bool networkdRunsHere() {
    std::error_code ec;
    auto ours = std::filesystem::read_symlink("/proc/self/ns/net", ec);
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
        std::ifstream comm(e.path() / "comm");
        std::string name;
        if (!(comm >> name) || name != "systemd-network") continue;  // comm is cut at 15 characters
        std::error_code ec2;
        auto theirs = std::filesystem::read_symlink(e.path() / "ns/net", ec2);
        // networkd runs as its own user: without CAP_SYS_PTRACE (a container)
        // its namespace is unreadable, but it shares our pid namespace, so our node.
        if (ec2 == std::errc::permission_denied || (!ec2 && theirs == ours)) return true;
    }
    return std::filesystem::exists("/run/systemd/netif/state", ec);
}

void Doctor::checkNetworkd(std::vector<DoctorCheck>& out) {
    if (!networkdRunsHere()) {
        out.push_back(skipped("networkd", "systemd-networkd does not run on this node"));
        return;
    }
    NetworkdDropins dropins(config_.gateway.networkdDropinDir);
    std::vector<std::string> missing;
    for (const auto& n : networkdDropinInterfaces(config_)) {
        if (!std::filesystem::exists(dropins.pathFor(n))) missing.push_back(dropins.pathFor(n));
    }
    if (missing.empty()) {
        out.push_back(ok("networkd", "systemd-networkd runs and the kovs drop-ins keep it away from kovs's interfaces"));
    } else {
        std::string all;
        for (const auto& m : missing) all += (all.empty() ? "" : ", ") + m;
        out.push_back(fail("networkd", "systemd-networkd runs without the drop-ins " + all,
                           "restart kovs-agent (it writes them), then networkctl reload"));
    }
}

std::string toString(DoctorCheck::Status s) {
    switch (s) {
        case Status::Ok: return "ok";
        case Status::Fail: return "FAIL";
        case Status::Skipped: return "skip";
    }
    return "?";
}

std::string formatReport(const std::vector<DoctorCheck>& checks) {
    std::string out;
    size_t failed = 0;
    for (const auto& c : checks) {
        out += fmt::format("  {:<5} {:<14} {}\n", toString(c.status), c.id, c.detail);
        if (c.status == Status::Fail) {
            ++failed;
            out += fmt::format("  {:<5} {:<14} fix: {}\n", "", "", c.hint);
        }
    }
    out += failed ? fmt::format("{} check(s) failed\n", failed) : std::string("all checks passed\n");
    return out;
}

nlohmann::json toJson(const std::vector<DoctorCheck>& checks) {
    auto arr = nlohmann::json::array();
    for (const auto& c : checks) {
        arr.push_back({{"check", c.id}, {"status", toString(c.status)}, {"detail", c.detail}, {"hint", c.hint}});
    }
    return arr;
}

}  // namespace kovs
