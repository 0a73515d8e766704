#include "cni/MainMode.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <set>

#include "base/RtnetlinkClient.hpp"
#include "base/Ethtool.hpp"
#include "base/IpPrefix.hpp"
#include "base/Netns.hpp"
#include "base/UndoStack.hpp"
#include "cni/AgentReport.hpp"
#include "cni/CniError.hpp"
#include "cni/CniResult.hpp"
#include "cni/IpamPlugin.hpp"
#include "cni/OvsdbSession.hpp"
#include "cni/PodAddressing.hpp"
#include "cni/VethPair.hpp"

namespace kovs::cni {
namespace {

using namespace std::chrono_literals;

// How long ADD waits for the agent to install the new pod's flows.
constexpr auto kFlowWait = 3000ms;
// ovsdb-server answers one transaction at a time; 20 pods started at once on
// a busy 2-core node took more than the 2 s this once was (a failed ADD,
// retried by the runtime seconds later). The runtime's own deadline for a
// CNI call is minutes.
constexpr auto kOvsdbTimeout = 10000ms;

// Runtime failures below the CNI layer (netlink, ethtool, OVSDB) become code 100.
template <typename Fn>
auto internal(const std::string& what, Fn fn) {
    try {
        return fn();
    } catch (const CniError&) {
        throw;
    } catch (const Error& e) {
        throw CniError(kInternal, what + ": " + e.what());
    }
}

std::string hostNameOf(const CniRequest& req) { return VethPair::hostNameFor(req.containerId, req.ifname); }

// The MTU of the node interface holding one of the pod's gateway addresses
// (gw0), if one does: pods then follow gw0, which the agent sizes to the
// uplink less the tunnel's overhead (70 bytes over an IPv6 underlay). An
// IPv6-only pod has only an IPv6 gateway.
std::optional<int> gatewayInterfaceMtu(const CniResult& lease) {
    RtnetlinkClient nl;
    for (const auto& ip : lease.ips) {
        std::optional<IpPrefix> gateway;
        try {
            gateway = IpPrefix::parse(ip.gateway);
        } catch (const std::exception&) {
            continue;
        }
        if (auto link = nl.linkHolding(*gateway)) return static_cast<int>(link->mtu);
    }
    return std::nullopt;
}

}  // namespace

nlohmann::json MainMode::add() {
    const auto& conf = req_.conf;
    auto hostName = hostNameOf(req_);
    // Everything that can be checked without creating state is checked first.
    try {
        Netns::open(req_.netns);
    } catch (const Error& e) {
        throw CniError(kInvalidEnv, std::string("CNI_NETNS: ") + e.what());
    }
    IpamPlugin ipam(conf.ipamType(), req_.path);
    OvsdbSession db(conf.ovsdb, conf.bridge, kOvsdbTimeout, kTryAgainLater);
    if (!internal("ovsdb", [&] { return db.ports().bridgeReady(); })) {
        throw CniError(kTryAgainLater, "bridge " + conf.bridge + " is not ready (missing, or ovs-vswitchd has not opened it)");
    }
    if (internal("veth", [&] { return VethPair::exists(hostName); })) {
        throw CniError(kInvalidEnv, "attachment " + req_.containerId + "/" + req_.ifname + " already exists (" + hostName + ")");
    }

    UndoStack rollback("cni ADD rollback");
    auto lease = ipam.add(req_.env, req_.stdinData);
    rollback.push("ipam DEL", [&] { ipam.del(req_.env, req_.stdinData); });

    std::optional<int> gatewayMtu;
    if (!conf.mtu && !conf.uplinkMtu) gatewayMtu = internal("ADD", [&] { return gatewayInterfaceMtu(lease); });
    const int mtu = conf.podMtu(gatewayMtu);
    const bool ipv6 = std::any_of(lease.ips.begin(), lease.ips.end(), [](const ResultIp& ip) { return ip.isV6(); });
    auto ends = internal("ADD", [&] { return VethPair::create(hostName, req_.netns, req_.ifname, mtu, ipv6); });
    rollback.push("delete veth " + hostName, [hostName] { VethPair::remove(hostName); });

    auto routes = internal("ADD " + req_.netns + ":" + req_.ifname, [&] {
        Netns in(req_.netns);
        auto installed = PodAddressing::apply(req_.ifname, lease);
        Ethtool().setTxChecksum(req_.ifname, false);
        return installed;
    });

    std::string ips;
    for (const auto& ip : lease.ips) ips += (ips.empty() ? "" : ",") + ip.address;
    ovs::PodPortIds ids;
    ids.network = conf.name;
    ids.containerId = req_.containerId;
    ids.ifname = req_.ifname;
    ids.netns = req_.netns;
    ids.podNamespace = req_.arg("K8S_POD_NAMESPACE");
    ids.podName = req_.arg("K8S_POD_NAME");
    ids.mac = ends.podMac;
    ids.ipAddresses = ips;
    PodPort port{hostName, ids, std::nullopt};
    // Undo registered first: a transaction that timed out here may still
    // have committed, and its rows would block a retried ADD.
    rollback.push("remove port " + hostName, [&] { db.ports().remove(hostName); });
    internal("ADD", [&] { db.ports().add(port); });
    rollback.commit();
    if (auto flows = waitForPortFlows(conf.agentSocket, hostName, kFlowWait); !flows.ready)
        spdlog::warn("ADD {}/{}: going on without the pod's flows confirmed: {}", req_.containerId, req_.ifname, flows.why);

    CniResult result;
    result.interfaces = {{ends.hostName, ends.hostMac, "", mtu}, {ends.podName, ends.podMac, req_.netns, mtu}};
    result.ips = lease.ips;
    for (auto& ip : result.ips) ip.interface = 1;
    result.routes = routes;
    result.dns = lease.dns;
    spdlog::info("ADD {}/{}: {} on {} , {} in {}", req_.containerId, req_.ifname, hostName, conf.bridge,
                 lease.ips.front().address, req_.netns);
    return result.toJson(conf.cniVersion);
}

void MainMode::del() {
    const auto& conf = req_.conf;
    auto hostName = hostNameOf(req_);
    IpamPlugin ipam(conf.ipamType(), req_.path);
    // OVS down: fail, so the runtime retries DEL instead of leaking the port.
    OvsdbSession db(conf.ovsdb, conf.bridge, kOvsdbTimeout, kTryAgainLater);
    bool hadPort = internal("DEL", [&] { return db.ports().remove(hostName); });
    // Deleting the host end takes the pod end with it; when the netns is
    // gone, the kernel already removed both.
    bool hadVeth = internal("DEL", [&] { return VethPair::remove(hostName); });
    ipam.del(req_.env, req_.stdinData);
    spdlog::info("DEL {}/{}: port {}, veth {}", req_.containerId, req_.ifname, hadPort ? "removed" : "absent",
                 hadVeth ? "removed" : "absent");
}

void MainMode::check() {
    const auto& conf = req_.conf;
    if (!conf.prevResult) throw CniError(kInvalidConfig, "CHECK needs prevResult");
    auto prev = CniResult::fromJson(*conf.prevResult, "prevResult");
    auto hostName = hostNameOf(req_);
    auto fail = [&](const std::string& what) { throw CniError(kCheckFailed, "CHECK " + req_.containerId + "/" + req_.ifname + ": " + what); };

    IpamPlugin ipam(conf.ipamType(), req_.path);
    OvsdbSession db(conf.ovsdb, conf.bridge, kOvsdbTimeout, kTryAgainLater);
    auto port = internal("CHECK", [&] { return db.ports().find(hostName); });
    if (!port) fail("port " + hostName + " is not on " + conf.bridge);
    if (port->attachment() != Attachment{req_.containerId, req_.ifname}) fail("port " + hostName + " belongs to another attachment");
    if (!internal("CHECK", [&] { return VethPair::exists(hostName); })) fail("veth " + hostName + " does not exist");

    // The IPs of prevResult that belong to our interface in this sandbox.
    std::vector<std::string> want;
    for (const auto& ip : prev.ips) {
        bool ours = !ip.interface;
        if (ip.interface && *ip.interface < prev.interfaces.size()) {
            const auto& itf = prev.interfaces[*ip.interface];
            ours = itf.name == req_.ifname && itf.sandbox == req_.netns;
        }
        if (ours) want.push_back(ip.address);
    }
    std::vector<std::string> have;
    bool txOn = true;
    try {
        Netns in(req_.netns);
        have = PodAddressing::addresses(req_.ifname);
        txOn = Ethtool().txChecksum(req_.ifname);
    } catch (const Error& e) {
        fail(e.what());
    }
    for (const auto& a : want) {
        if (std::find(have.begin(), have.end(), a) == have.end()) fail("address " + a + " is missing on " + req_.ifname);
    }
    if (txOn) fail("tx-checksumming is on for " + req_.ifname + " in " + req_.netns);
    ipam.check(req_.env, req_.stdinData);
}

void MainMode::gc() {
    const auto& conf = req_.conf;
    std::set<Attachment> valid(conf.validAttachments->begin(), conf.validAttachments->end());
    IpamPlugin ipam(conf.ipamType(), req_.path);
    OvsdbSession db(conf.ovsdb, conf.bridge, kOvsdbTimeout, kTryAgainLater);
    std::vector<std::string> failures;
    for (const auto& port : internal("GC", [&] { return db.ports().list(); })) {
        // Another kovs network on the same bridge (a second attachment) has
        // its own valid list: its ports are not ours to judge.
        if (valid.count(port.attachment()) || (!port.ids.network.empty() && port.ids.network != conf.name)) continue;
        try {
            // host-local (1.1.1) has no GC: release the stale lease as its DEL would.
            Env env = req_.env;
            env["CNI_CONTAINERID"] = port.ids.containerId;
            env["CNI_IFNAME"] = port.ids.ifname;
            env.erase("CNI_NETNS");
            ipam.del(env, req_.stdinData);
            VethPair::remove(port.name);
            // The port last: it is GC's only record, and a step that failed
            // above is retried by the next GC only while the port remains.
            db.ports().remove(port.name);
            spdlog::info("GC: removed stale {}/{} ({})", port.ids.containerId, port.ids.ifname, port.name);
        } catch (const std::exception& e) {
            failures.push_back(port.name + ": " + e.what());
        }
    }
    if (!failures.empty()) {
        std::string all;
        for (const auto& f : failures) all += (all.empty() ? "" : "; ") + f;
        throw CniError(kInternal, "GC: " + std::to_string(failures.size()) + " stale attachment(s) not removed", all);
    }
}

void MainMode::status() {
    OvsdbSession db(req_.conf.ovsdb, req_.conf.bridge, 1000ms, kPluginNotAvailable);
    bool ready = false;
    try {
        ready = db.ports().bridgeReady();
    } catch (const Error& e) {
        throw CniError(kPluginNotAvailable, std::string("STATUS: ") + e.what());
    }
    if (!ready) throw CniError(kPluginNotAvailable, "STATUS: bridge " + req_.conf.bridge + " is not ready");
}

}  // namespace kovs::cni
