#include "ctl/Doctor.hpp"
#include "ctl/DoctorFindings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "agent/JobOptions.hpp"
#include "agent/PeerFanout.hpp"
#include "base/Error.hpp"
#include "base/EventLoop.hpp"
#include "base/Netns.hpp"
#include "base/Process.hpp"
#include "base/RtnetlinkClient.hpp"
#include "base/Strings.hpp"
#include "bridge/BridgePlanner.hpp"
#include "daemons/PacketSocketBuffers.hpp"
#include "daemons/SocketBufferSizer.hpp"
#include "flows/FlowDump.hpp"
#include "flows/FlowReconciler.hpp"
#include "flows/OpenFlowBridge.hpp"
#include "gateway/TunnelOverhead.hpp"
#include "offload/PodInterfaces.hpp"
#include "ovs/OvsdbClient.hpp"
#include "ovs/UnixctlClient.hpp"
#include "policy/PolicySource.hpp"
#include "uplink/Uplink.hpp"

namespace kovs::ctl {
namespace {

constexpr std::chrono::milliseconds kPolicyListTimeout{10'000};

// The NetworkPolicy the flow job renders from, as the agent's own policy
// source (its credentials, this node's name) gets it from the API; none,
// with `why`, when the API does not deliver it.
std::optional<policy::CompiledPolicy> listPolicy(const agent::Config& config, std::string& why) {
    try {
        EventLoop loop;
        policy::PolicySource source(loop, agent::kubeCredentials(config), config.node.name);
        std::optional<policy::CompiledPolicy> listed;
        source.start([&](const policy::CompiledPolicy& p) { listed = p; });
        loop.runUntil([&] { return listed.has_value(); }, kPolicyListTimeout);
        source.stop();
        if (!listed)
            why = fmt::format("the Kubernetes API listed no NetworkPolicies, Pods and Namespaces within {} s",
                              kPolicyListTimeout.count() / 1000);
        return listed;
    } catch (const std::exception& e) {
        why = std::string("the NetworkPolicies cannot be listed: ") + e.what();
        return std::nullopt;
    }
}

int mtuOf(const std::string& ifname) {
    std::ifstream f("/sys/class/net/" + ifname + "/mtu");
    int mtu = 0;
    return (f >> mtu) ? mtu : 0;
}

// The tunnel actually in use and what it adds: the other CNI's in companion
// mode (OVN's Geneve carries an option the TLV table maps), kovs's own VXLAN
// in standalone mode. {overhead, what} for the report.
std::pair<int, std::string> tunnelOverheadInUse(const agent::Config& config, const ovs::OvsdbReplica& replica) {
    auto tunnels = gateway::tunnelsOn(replica, config.bridge.integration);
    int options = 0;
    bool geneve = std::any_of(tunnels.begin(), tunnels.end(), [](const gateway::TunnelInUse& t) { return t.type == "geneve"; });
    std::string optionsFrom;
    if (geneve) {
        auto r = runProcess({"ovs-ofctl", "dump-tlv-map", config.bridge.integration});
        try {
            options = gateway::geneveOptionBytes(r.out);
            optionsFrom = fmt::format(" with {} bytes of options (TLV table)", options);
        } catch (const std::exception&) {
            options = 8;  // OVN's one 4-byte option, when the table cannot be read
            optionsFrom = " with OVN's 8 bytes of options (TLV table unreadable: " + r.err.substr(0, 60) + ")";
        }
    }
    int worst = 0;
    std::string what;
    for (const auto& t : tunnels) {
        auto o = gateway::tunnelOverhead(t, options);
        if (o && *o > worst) {
            worst = *o;
            what = fmt::format("{} ({}{})", t.port, t.type, t.type == "geneve" ? optionsFrom : "");
        }
    }
    if (worst == 0) return {config.tunnelOverhead(), "VXLAN (no tunnel port on " + config.bridge.integration + " yet)"};
    return {worst, what};
}

// Pod packets cross the tunnel whole: the gateway's and every pod's MTU plus
// the tunnel's overhead must fit the uplink's MTU, or large packets are lost.
void checkMtu(const agent::Config& config, const ovs::OvsdbReplica& replica, const std::vector<offload::PodInterface>& pods,
              std::vector<DoctorCheck>& out) {
    auto [overhead, tunnel] = tunnelOverheadInUse(config, replica);
    // The bridge holding the node IP carries the tunnel; without one, trust the config.
    int uplinkMtu = mtuOf(config.bridge.physical);
    if (uplinkMtu == 0 || (config.uplink.mode == agent::Config::UplinkMode::None && !config.bridge.physicalConfigured))
        uplinkMtu = config.uplink.mtu;
    std::vector<std::pair<std::string, int>> mtus;
    const int gw = mtuOf(config.bridge.gateway);
    if (gw) mtus.emplace_back(config.bridge.gateway, gw);
    for (const auto& p : pods) {
        try {
            unsigned mtu = 0;
            {
                // /sys shows the namespace sysfs was mounted in, not the thread's: ask rtnetlink there.
                Netns in(p.netns);
                mtu = RtnetlinkClient().requireLink(p.ifname).mtu;
            }
            if (mtu) mtus.emplace_back("pod " + p.pod, static_cast<int>(mtu));
        } catch (const std::exception&) {
            // tx-checksum reports a pod whose netns is gone.
        }
    }
    std::string tooBig;
    for (const auto& [who, mtu] : mtus) {
        if (mtu + overhead > uplinkMtu) tooBig += fmt::format("{}{} ({})", tooBig.empty() ? "" : ", ", who, mtu);
    }
    // Standalone: pods get gw0's MTU at ADD. One above it was made before gw0
    // went down to a narrower path to a peer (the agent's followNarrowestPath).
    std::string aboveGateway;
    if (config.mode == agent::Config::Mode::Standalone && gw) {
        for (const auto& [who, mtu] : mtus) {
            if (mtu > gw) aboveGateway += fmt::format("{}{} ({})", aboveGateway.empty() ? "" : ", ", who, mtu);
        }
    }
    if (!aboveGateway.empty()) {
        out.push_back(fail("mtu", fmt::format("MTU above {}'s {}: {}", config.bridge.gateway, gw, aboveGateway),
                           fmt::format("they were made before {} went down to the narrowest path to a peer (kovsctl "
                                       "status: tunnel.narrowestPath); recreate them to get {}",
                                       config.bridge.gateway, gw)));
    }
    if (tooBig.empty()) {
        if (aboveGateway.empty())
            out.push_back(ok("mtu", fmt::format("{} MTUs fit the tunnel in use, {}: {} bytes over a {}-byte uplink", mtus.size(),
                                            tunnel, overhead, uplinkMtu)));
    } else {
        out.push_back(fail("mtu", fmt::format("MTU + {} bytes of {} exceeds the uplink's {}: {}", overhead, tunnel, uplinkMtu, tooBig),
                           fmt::format("give them at most {} (gateway.mtu for the gateway; the CNI's mtu for pods)",
                                       uplinkMtu - overhead)));
    }
}

}  // namespace

void Doctor::checkOvs(std::vector<DoctorCheck>& out) {
    auto remote = config_.ovsdbRemote();
    try {
        EventLoop loop;
        ovs::OvsdbClient db(loop, ovsdbOptions(config_));  // with the bridge job's monitor: its replica is the dry run's input
        db.start();
        if (!db.waitReady(std::chrono::seconds(3))) throw Error("ovsdb " + remote + ": not reachable within 3 s");
        ovsReachable_ = true;
        out.push_back(ok("ovsdb", "ovsdb-server answers on " + remote));

        std::vector<std::string> bridges{config_.bridge.integration};
        if (tunnelJobWanted(config_)) bridges.push_back(config_.bridge.physical);  // kovs's br-phy, or theirs (uplink none)
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
        checkBridges(db.replica(), out);
        checkUplink(db.replica(), out);
        // kovs-cni's pods and the other CNI's, found as the offload guard finds them.
        pods_ = offload::podInterfacesFromReplica(db.replica(), config_.bridge.integration);
        checkMtu(config_, db.replica(), pods_, out);
        checkFlows(db.replica(), out);
    } catch (const std::exception& e) {
        out.push_back(fail("ovsdb", e.what(), "start ovsdb-server, or set ovs.manage: true so the agent runs it"));
    }
    try {
        ovs::BlockingUnixctlClient ctl(config_.ovs.rundir);
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
    // A dry run of the socket buffer job: its observation and plan. A socket
    // vswitchd has just opened (a new port, its first transmit) is the job's
    // within its poll; only one still small after that is a finding.
    const int bytes = config_.ovs.socketBufferKiB * 1024;
    std::vector<daemons::PacketSocketInfo> sockets;
    try {
        pid_t pid = daemons::vswitchdPid(config_.ovs.rundir);
        sockets = daemons::packetSockets(pid);
        if (!daemons::undersizedSockets(sockets, bytes).empty()) {
            std::this_thread::sleep_for(daemons::SocketBufferSizer::kSendSocketPoll + std::chrono::milliseconds(500));
            sockets = daemons::packetSockets(pid);
        }
    } catch (const std::exception& e) {
        out.push_back(skipped("socket-buffers", std::string("cannot inspect vswitchd's packet sockets: ") + e.what()));
        return;
    }
    out.push_back(socketBufferFinding(sockets, config_.ovs.socketBufferKiB));
}

// A dry run of the uplink job: the steps it would take to put the node's
// underlay identity back on the bridge (the same observe and plan as its
// start-up migration and its repairs after).
void Doctor::checkUplink(const ovs::OvsdbReplica& replica, std::vector<DoctorCheck>& out) {
    if (config_.uplink.mode == agent::Config::UplinkMode::None) return;
    auto opts = uplinkOptions(config_);
    try {
        out.push_back(uplinkFinding(opts, uplink::Uplink(opts).plan(replica)));
    } catch (const std::exception& e) {
        out.push_back(fail("uplink", e.what(), "the uplink interface or its addresses are gone: see kovs-agent's log"));
    }
}

// A dry run of the bridge job: what it would send OVSDB now.
void Doctor::checkBridges(const ovs::OvsdbReplica& replica, std::vector<DoctorCheck>& out) {
    try {
        auto plan = bridge::BridgePlanner(bridgeOptions(config_, replica)).plan(replica);
        if (plan.txn.empty()) {
            out.push_back(ok("bridges", "bridges and ports are as kovs-agent makes them"));
            return;
        }
        std::string all;
        for (const auto& c : plan.changes) all += (all.empty() ? "" : "; ") + c;
        out.push_back(fail("bridges", "OVSDB lacks what the bridge job would make: " + all,
                           "kovs-agent's bridge job does this on the monitor update or its next resync (is it running?)"));
    } catch (const std::exception& e) {
        out.push_back(fail("bridges", e.what(), "fix the bridge names in the agent configuration"));
    }
}

// A dry run of the flow job: the table it would install, rendered from the
// same inputs (the OVSDB replica, the peers), against what the bridge holds.
// It needs no agent: with the agent down the peers come from its peer file.
void Doctor::checkFlows(const ovs::OvsdbReplica& replica, std::vector<DoctorCheck>& out) {
    if (config_.mode != agent::Config::Mode::Standalone) return;
    const auto& bridge = config_.bridge.integration;
    if (agentStatus_.contains("flows")) {
        if (auto error = agentStatus_["flows"].value("error", ""); !error.empty())
            out.push_back(fail("flows", "the agent's flow job failed: " + error,
                               "it retries with backoff; ovs-ofctl dump-flows " + bridge + " shows what is there"));
    }
    std::string origin;
    std::optional<peers::PeerSet> peers;
    try {
        peers = knownPeers(origin);
    } catch (const std::exception& e) {
        out.push_back(fail("flows", std::string("the peers the flow table is made from: ") + e.what(),
                           "fix the peer file; kovs-agent logs the same error"));
        return;
    }
    if (!peers) {
        out.push_back(skipped("flows", origin + ": the table is unknown"));
        return;
    }
    auto opts = flowOptions(config_);
    ProcessResult shown;
    try {
        shown = runProcess({"ovs-ofctl", "dump-flows", flows::managementTarget(opts.rundir, bridge)});
    } catch (const std::exception& e) {  // not installed here: a flows finding, not an OVSDB one
        out.push_back(fail("flows", std::string("cannot run ovs-ofctl: ") + e.what(),
                           "install Open vSwitch's tools, or run kovsctl where they are (the agent's container, or "
                           "/opt/kovs/bin/kovsctl on a kind node)"));
        return;
    }
    if (!shown.ok()) {
        out.push_back(fail("flows", "cannot read " + bridge + "'s flows: " + shown.err.substr(0, 200),
                           "is ovs-vswitchd running? (see the vswitchd check)"));
        return;
    }
    // With NetworkPolicy enforced the table has a policy stage: rendered
    // without it, every node with a policy selecting a local pod would fail.
    std::optional<policy::CompiledPolicy> policy;
    if (config_.enforcesPolicy()) {
        std::string why;
        policy = listPolicy(config_, why);
        if (!policy) {
            out.push_back(skipped("flows", why + ": the table is unknown"));
            return;
        }
        origin += " and the API's NetworkPolicies";
    }
    auto held = flows::parseFlowDump(shown.out);
    flows::FlowTable::Rendered want;
    try {
        auto in = flows::flowInputs(opts, replica, agent::flowPeers(*peers), policy ? &*policy : nullptr);
        // Of two rows claiming one address, the pod the installed table serves keeps it, as in the agent.
        in.holders = flows::FlowTable::holdersIn(held, in.pods);
        want = flows::FlowTable::render(in);
    } catch (const std::exception& e) {
        out.push_back(fail("flows", "the flow job cannot make its table: " + std::string(e.what()),
                           "the gateway and tunnel ports need an ofport: ovs-vsctl list interface shows why they have none"));
        return;
    }
    for (const auto& why : want.skipped) {
        out.push_back(fail("flows", "a pod has no flows: " + why,
                           "its OVSDB row (external_ids ip-address, attached-mac) is unusable or claims another row's "
                           "address: ovs-vsctl del-port a stale row, delete and re-create a pod with a bad one"));
    }
    const auto wanted = want.flows.size();
    if (held.count != wanted || want.skipped.empty()) out.push_back(flowsFinding(bridge, held.count, wanted, origin));
}

}  // namespace kovs::ctl
