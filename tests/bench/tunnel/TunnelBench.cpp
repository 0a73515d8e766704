// bench_tunnel: programming N peers (ovs/route/add + tnl/neigh/set each) into
// a real userspace ovs-vswitchd, three ways in the same run:
//   1. one pipelined unixctl batch (UnixctlClient::pipeline, waited for),
//   2. a full TunnelReconciler pass (read-back + diff + batch),
//   3. the reference: one `ovs-appctl` process per command.
// Runs in a private network + mount namespace of its own; prints figures and
// ratios, asserts nothing about time.
//   KOVS_BENCH_TUNNEL_PEERS (default 1000)
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <spdlog/spdlog.h>

#include "tests/support/PrivateNamespaces.hpp"
#include "base/EventLoop.hpp"
#include "base/Process.hpp"
#include "ovs/UnixctlClient.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tunnel/OvsTunnelState.hpp"
#include "tunnel/TunnelReconciler.hpp"

using namespace kovs;
using namespace kovs::tunnel;
using kovs::peers::Peer;
using kovs::peers::PeerSet;
using Clock = std::chrono::steady_clock;

namespace {

struct FakePeer {
    std::string ip, mac;
};

std::vector<FakePeer> makePeers(int n) {
    std::vector<FakePeer> v;
    for (int i = 0; i < n; ++i) {
        int hi = 1 + i / 250, lo = 1 + i % 250;
        char mac[32];
        std::snprintf(mac, sizeof mac, "02:00:00:00:%02x:%02x", hi & 0xff, lo & 0xff);
        v.push_back({"172.30." + std::to_string(hi) + "." + std::to_string(lo), mac});
    }
    return v;
}

// Peer MACs without ARP: the benchmark measures programming OVS, not the underlay.
class StaticNeighbours : public Underlay {
public:
    explicit StaticNeighbours(std::map<std::string, std::string> m) : m_(std::move(m)) {}
    std::map<std::string, std::string> resolved(const std::string&) override { return m_; }
    PeerPath pathTo(const std::string&) override { return {}; }  // on-link
    void trigger(const std::string&) override {}
    std::vector<AddressInfo> addresses(const std::string&) override { return {}; }  // no cover planned
    void setAddress(const std::string&, const AddressInfo&, bool) override {}

private:
    std::map<std::string, std::string> m_;
};

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Counts our entries, so every figure is checked to have done the work.
void expectProgrammed(const test::OvsSandbox& ovs, size_t n, const char* what) {
    auto st = parseOvsTunnelState(ovs.appctl({"ovs/route/show"}), ovs.appctl({"tnl/neigh/show"}), "br-phy");
    if (st.userRoutes.size() != n || st.neighbours.size() != n) {
        std::fprintf(stderr, "%s: expected %zu routes+neighbours, found %zu routes, %zu neighbours\n", what, n,
                     st.userRoutes.size(), st.neighbours.size());
        std::exit(1);
    }
}

void clear(ovs::BlockingUnixctlClient& ctl, const std::vector<FakePeer>& peers) {
    std::vector<ovs::UnixctlCommand> cmds;
    for (const auto& p : peers) cmds.push_back({"ovs/route/del", {p.ip + "/32"}});
    cmds.push_back({"tnl/neigh/flush", {}});
    ctl.pipeline(cmds);
}

}  // namespace

int main() {
    if (int rc = test::enterPrivateNamespaces("bench_tunnel")) return rc;
    spdlog::set_level(spdlog::level::warn);
    const char* env = std::getenv("KOVS_BENCH_TUNNEL_PEERS");
    int n = env && *env ? std::max(1, std::atoi(env)) : 1000;
    auto peers = makePeers(n);

    test::OvsSandbox ovs;
    ovs.vsctl({"add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev"});
    runChecked({"ip", "addr", "add", "172.30.0.254/16", "dev", "br-phy"});
    runChecked({"ip", "link", "set", "br-phy", "up"});
    ovs::BlockingUnixctlClient ctl(ovs.dir(), "ovs-vswitchd", std::chrono::seconds(60));

    // 1. One pipelined batch.
    std::vector<ovs::UnixctlCommand> cmds;
    for (const auto& p : peers) {
        cmds.push_back({"ovs/route/add", {p.ip + "/32", "br-phy"}});
        cmds.push_back({"tnl/neigh/set", {"br-phy", p.ip, p.mac}});
    }
    ctl.pipeline({{"version", {}}});  // connect outside the timing
    auto t0 = Clock::now();
    auto replies = ctl.pipeline(cmds).replies;
    auto pipelined = Clock::now() - t0;
    for (size_t i = 0; i < replies.size(); ++i) {
        if (!replies[i].ok) {
            std::fprintf(stderr, "%s: %s\n", cmds[i].describe().c_str(), replies[i].text.c_str());
            return 1;
        }
    }
    expectProgrammed(ovs, peers.size(), "pipelined");
    clear(ctl, peers);
    expectProgrammed(ovs, 0, "cleared");

    // 2. A reconciler pass from an empty vswitchd (what a restart costs).
    PeerSet set;
    std::map<std::string, std::string> macs;
    for (const auto& p : peers) {
        set[p.ip] = Peer{p.ip, {kovs::IpPrefix::parse(p.ip)}, {}};
        macs[p.ip] = p.mac;
    }
    EventLoop loop;
    ovs::UnixctlClient async(loop, ovs.dir(), "ovs-vswitchd", std::chrono::seconds(60));
    StaticNeighbours neigh(macs);
    TunnelReconciler reconciler(loop, async, neigh, TunnelReconcilerOptions{});
    t0 = Clock::now();
    reconciler.setPeers(set);
    reconciler.start();  // the first pass, with the peers; the loop runs it
    loop.runUntil([&] { return reconciler.stats().passes == 1; }, std::chrono::minutes(5));
    auto reconcilePass = Clock::now() - t0;
    if (!reconciler.stats().lastError.empty()) {
        std::fprintf(stderr, "reconciler: %s\n", reconciler.stats().lastError.c_str());
        return 1;
    }
    expectProgrammed(ovs, peers.size(), "reconciler");
    // A pass with nothing to change: the steady-state resync cost.
    t0 = Clock::now();
    reconciler.reconcileOnce(std::chrono::minutes(5));
    auto noopPass = Clock::now() - t0;
    clear(ctl, peers);

    // 3. Reference: ovs-appctl per command.
    t0 = Clock::now();
    for (const auto& c : cmds) {
        std::vector<std::string> args{c.command};
        args.insert(args.end(), c.args.begin(), c.args.end());
        ovs.appctl(args);
    }
    auto perCommand = Clock::now() - t0;
    expectProgrammed(ovs, peers.size(), "ovs-appctl");

    std::printf("bench_tunnel: %d peers = %zu unixctl commands (ovs/route/add + tnl/neigh/set)\n", n, cmds.size());
    std::printf("  pipelined over one unixctl connection : %9.1f ms  (%.1f us/command)\n", ms(pipelined),
                ms(pipelined) * 1000 / cmds.size());
    std::printf("  TunnelReconciler pass from empty OVS  : %9.1f ms  (read-back + diff + batch)\n", ms(reconcilePass));
    std::printf("  TunnelReconciler pass, nothing to do  : %9.1f ms\n", ms(noopPass));
    std::printf("  ovs-appctl per command (reference)    : %9.1f ms  (%.1f us/command)\n", ms(perCommand),
                ms(perCommand) * 1000 / cmds.size());
    std::printf("  ratio ovs-appctl / pipelined          : %9.1fx\n", ms(perCommand) / ms(pipelined));
    std::printf("  ratio ovs-appctl / reconciler pass    : %9.1fx\n", ms(perCommand) / ms(reconcilePass));
    return 0;
}
