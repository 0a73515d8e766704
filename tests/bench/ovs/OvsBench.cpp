// bench_datapath: kovs's native OVS clients against the OVS command-line tools
// doing the same work, measured back to back in the same run. Prints figures
// and ratios; asserts nothing about time.
//  1. 100 ports added through OvsdbClient (one transaction each) vs
//     `ovs-vsctl --no-wait add-port` x100 (database only: no vswitchd, so
//     both sides measure the control channel, not port creation).
//  2. 1000 unixctl calls pipelined on one UnixctlClient connection vs
//     `ovs-appctl` x1000 (plus the same calls one at a time on one connection).
// Runs in a private network + mount namespace of its own.
//   KOVS_BENCH_DATAPATH_PORTS (default 100), KOVS_BENCH_DATAPATH_CALLS (default 1000)
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <functional>
#include <string>

#include "tests/support/PrivateNamespaces.hpp"
#include "base/Error.hpp"
#include "base/Process.hpp"
#include "ovs/OvsdbClient.hpp"
#include "ovs/UnixctlClient.hpp"
#include "tests/support/OvsSandbox.hpp"

using namespace kovs;
using Clock = std::chrono::steady_clock;
namespace ovsdb = kovs::ovsdb;

namespace {

int envInt(const char* name, int def) {
    const char* v = std::getenv(name);
    return v && *v ? std::max(1, std::atoi(v)) : def;
}

double timeMs(const std::function<void()>& f) {
    auto t0 = Clock::now();
    f();
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void ports(int n) {
    test::OvsSandbox ovs(false);
    ovs.vsctl({"--no-wait", "add-br", "br-a", "--", "add-br", "br-b"});
    EventLoop loop;
    ovs::OvsdbClientOptions o;
    o.remote = ovs.dbRemote();
    o.monitorTables.clear();  // as kovs-cni uses it
    ovs::OvsdbClient client(loop, o);
    auto brA = client.transactSync(ovsdb::Transaction().select("Bridge", ovsdb::whereName("br-a"), {"_uuid"}));
    std::string brUuid = brA.at(0)["rows"].at(0)["_uuid"][1];

    double native = timeMs([&] {
        for (int i = 0; i < n; ++i) {
            std::string name = "pa" + std::to_string(i);
            ovsdb::Transaction t;
            t.insert("Interface", {{"name", name}, {"type", "internal"}}, "i")
                .insert("Port", {{"name", name}, {"interfaces", ovsdb::namedUuid("i")}}, "p")
                .mutate("Bridge", ovsdb::whereUuid(brUuid),
                        ovsdb::Json::array({ovsdb::Json::array({"ports", "insert", ovsdb::set({ovsdb::namedUuid("p")})})}));
            client.transactSync(t);
        }
    });
    double vsctl = timeMs([&] {
        for (int i = 0; i < n; ++i) {
            std::string name = "pb" + std::to_string(i);
            ovs.vsctl({"--no-wait", "add-port", "br-b", name, "--", "set", "Interface", name, "type=internal"});
        }
    });
    // Both did the work: count the ports OVS now has.
    auto countA = runChecked({"ovs-vsctl", "--db=" + ovs.dbRemote(), "list-ports", "br-a"});
    auto countB = runChecked({"ovs-vsctl", "--db=" + ovs.dbRemote(), "list-ports", "br-b"});
    auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
    std::printf("ports: %d added through OvsdbClient (%ld in OVS): %.1f ms total, %.3f ms/port\n", n, lines(countA),
                native, native / n);
    std::printf("ports: %d added by ovs-vsctl --no-wait add-port (%ld in OVS): %.1f ms total, %.3f ms/port\n", n,
                lines(countB), vsctl, vsctl / n);
    std::printf("ports: ratio ovs-vsctl / OvsdbClient = %.1fx\n", vsctl / native);
}

void unixctl(int n) {
    test::OvsSandbox ovs;
    ovs::BlockingUnixctlClient client(ovs.dir(), "ovs-vswitchd", std::chrono::seconds(60));
    client.call("version");  // connect outside the measurement, like a long-lived agent
    std::vector<ovs::UnixctlCommand> cmds(static_cast<size_t>(n), ovs::UnixctlCommand{"ovs/route/show", {}});
    size_t ok = 0;
    double pipelined = timeMs([&] {
        for (const auto& r : client.pipeline(cmds).replies) ok += r.ok;
    });
    size_t okSeq = 0;
    double sequential = timeMs([&] {
        for (int i = 0; i < n; ++i) okSeq += !client.call("ovs/route/show").empty();
    });
    size_t okAppctl = 0;
    double appctl = timeMs([&] {
        for (int i = 0; i < n; ++i) okAppctl += !ovs.appctl({"ovs/route/show"}).empty();
    });
    std::printf("unixctl: %d x ovs/route/show pipelined on one connection (%zu ok): %.1f ms, %.1f us/call\n", n, ok,
                pipelined, 1000 * pipelined / n);
    std::printf("unixctl: %d x ovs/route/show one at a time on one connection (%zu ok): %.1f ms, %.1f us/call\n", n,
                okSeq, sequential, 1000 * sequential / n);
    std::printf("unixctl: %d x ovs-appctl ovs/route/show (%zu ok): %.1f ms, %.1f us/call\n", n, okAppctl, appctl,
                1000 * appctl / n);
    std::printf("unixctl: ratio ovs-appctl / pipelined = %.1fx, ovs-appctl / one-at-a-time = %.1fx\n",
                appctl / pipelined, appctl / sequential);
}

}  // namespace

int main() {
    if (int rc = test::enterPrivateNamespaces("bench_datapath")) return rc;
    try {
        ports(envInt("KOVS_BENCH_DATAPATH_PORTS", 100));
        unixctl(envInt("KOVS_BENCH_DATAPATH_CALLS", 1000));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_datapath: %s\n", e.what());
        return 1;
    }
    return 0;
}
