#include "ctl/Doctor.hpp"

#include <fmt/format.h>

#include "base/Error.hpp"

#include "agent/JobOptions.hpp"
#include "bridge/BridgePlanner.hpp"
#include "cni/PodPorts.hpp"
#include "ovs/OvsdbClient.hpp"
#include "ovs/PacketSocketBuffers.hpp"
#include "ovs/UnixctlClient.hpp"

namespace kovs {

void Doctor::checkOvs(std::vector<DoctorCheck>& out) {
    auto remote = config_.ovsdbRemote();
    try {
        EventLoop loop;
        OvsdbClientOptions o;
        o.remote = remote;
        OvsdbClient db(loop, o);  // with the bridge job's monitor: its replica is the dry run's input
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
        checkBridges(db.replica(), out);
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

// A dry run of the bridge job: what it would send OVSDB now.
void Doctor::checkBridges(const OvsdbReplica& replica, std::vector<DoctorCheck>& out) {
    try {
        auto plan = BridgePlanner(bridgeOptions(config_, replica)).plan(replica);
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

// The flow table as the agent reports it (doctor cannot render it: the peer
// set and ofports are the agent's).
void Doctor::checkFlows(std::vector<DoctorCheck>& out) {
    if (config_.mode != Config::Mode::Standalone) return;
    if (agentStatus_.is_null() || !agentStatus_.contains("flows")) {
        out.push_back(skipped("flows", "the agent did not answer: its flow table is unknown"));
        return;
    }
    const auto& f = agentStatus_["flows"];
    auto error = f.value("error", "");
    if (!error.empty()) {
        out.push_back(fail("flows", "the flow table is not installed: " + error,
                           "the flow job retries with backoff; ovs-ofctl dump-flows " + config_.bridge.integration +
                               " shows what is there"));
        return;
    }
    size_t leftOut = 0;
    for (const auto& why : f.value("podsLeftOut", nlohmann::json::array())) {
        ++leftOut;
        out.push_back(fail("flows", "a pod has no flows: " + why.get<std::string>(),
                           "its OVSDB row (external_ids ip-address, attached-mac) is unusable; delete and re-create the pod"));
    }
    if (leftOut == 0)
        out.push_back(ok("flows", fmt::format("flow table installed ({} installs, {} read-back repairs)", f.value("installs", 0),
                                              f.value("readBackRepairs", 0))));
}

}  // namespace kovs
