// kovs-cni against a real userspace OVS bridge, real host-local IPAM and real
// network namespaces, exec'd as a container runtime would. Observable state
// (links, addresses, routes, OVS rows, lease files, `ethtool -k`) is the judge.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "base/Process.hpp"
#include "base/UniqueFd.hpp"
#include "base/Ethtool.hpp"
#include "base/Netns.hpp"
#include "cni/VethPair.hpp"
#include "tests/integration/cni/CniTestSupport.hpp"
#include "tests/support/TestNetns.hpp"
#include "tests/support/OvsSandbox.hpp"
#include "tests/support/Poll.hpp"

using nlohmann::json;
using namespace kovs::test;
using kovs::cni::VethPair;

namespace {

std::vector<std::string> linkNames(const std::string& netns) {
    std::vector<std::string> argv{"ip", "-o", "link", "show"};
    if (!netns.empty()) argv.insert(argv.begin() + 1, {"-n", netns});
    std::istringstream in(kovs::runChecked(argv));
    std::vector<std::string> names;
    std::string line;
    while (std::getline(in, line)) {
        // "7: name@peer: <...>" or "7: name: <...>"
        auto a = line.find(": ");
        auto b = line.find_first_of("@:", a + 2);
        names.push_back(line.substr(a + 2, b - a - 2));
    }
    std::sort(names.begin(), names.end());
    return names;
}

class KovsCni : public ::testing::Test {
protected:
    // One OVS for the whole suite (starting one costs seconds); each test
    // leaves it as it found it: br-int alone and without ports.
    static inline std::unique_ptr<OvsSandbox> sandbox;
    static void SetUpTestSuite() {
        sandbox = std::make_unique<OvsSandbox>();
        sandbox->vsctl({"add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev"});
    }
    static void TearDownTestSuite() { sandbox.reset(); }

    OvsSandbox& ovs = *sandbox;
    TestNetns pod{"kovs-cni-pod"};
    TempDir data;
    std::string cni = kovsCniBinary();

    void SetUp() override {
        ASSERT_TRUE(pollUntil([&] { return ofport("br-int") > 0; }, std::chrono::seconds(10)))
            << "br-int never got its local port: ofport " << ofport("br-int");
    }

    void TearDown() override {
        if (!kovs::runProcess({"ovs-vsctl", "--db=" + ovs.dbRemote(), "--timeout=1", "show"}).ok()) ovs.startOvsdb();
        for (std::string br : {"br-other"}) ovs.vsctl({"--if-exists", "del-br", br});
        std::istringstream ports(ovs.vsctl({"list-ports", "br-int"}));
        for (std::string port; std::getline(ports, port);) ovs.vsctl({"del-port", "br-int", port});
        for (const auto& link : linkNames("")) {
            if (link.rfind("kovs", 0) == 0) kovs::runProcess({"ip", "link", "del", link});
        }
    }

    int64_t ofport(const std::string& iface) const {
        auto r = kovs::runProcess({"ovs-vsctl", "--db=" + ovs.dbRemote(), "get", "Interface", iface, "ofport"});
        try {
            return r.ok() ? std::stoll(r.out) : -1;
        } catch (...) {
            return -1;
        }
    }

    json ipam() const {
        return {{"type", "host-local"},
                {"dataDir", data.path()},
                {"ranges", json::array({json::array({{{"subnet", "10.244.0.0/24"}, {"gateway", "10.244.0.1"}}})})}};
    }

    json mainConf(const std::string& version = "1.0.0") const {
        return {{"cniVersion", version}, {"name", "kovs-test"}, {"type", "kovs"},      {"ovsdb", ovs.dbRemote()},
                {"bridge", "br-int"},    {"ipam", ipam()},      {"logLevel", "debug"}};
    }

    std::map<std::string, std::string> env(const std::string& command, const std::string& id = "c1",
                                           const std::string& ifname = "eth0") const {
        return {{"CNI_COMMAND", command}, {"CNI_CONTAINERID", id},     {"CNI_NETNS", pod.path()},
                {"CNI_IFNAME", ifname},   {"CNI_PATH", "/usr/lib/cni"}, {"CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"}};
    }

    CniCall call(const std::map<std::string, std::string>& e, const json& conf) const { return runCni(cni, e, conf.dump()); }

    std::string ports() const { return ovs.vsctl({"list-ports", "br-int"}); }
    std::string portIds(const std::string& port) const { return ovs.vsctl({"get", "Port", port, "external_ids"}); }
};

}  // namespace

TEST_F(KovsCni, MainModeAddCheckDel) {
    auto add = call(env("ADD"), mainConf());
    ASSERT_EQ(add.exitCode, 0) << add.out << add.err;
    auto res = add.json();
    auto host = VethPair::hostNameFor("c1", "eth0");

    // The result: host end + pod end with sandbox, IP on interface 1, default route, MAC as the kernel has it.
    ASSERT_EQ(res.at("interfaces").size(), 2u) << res;
    EXPECT_EQ(res["interfaces"][0]["name"], host);
    EXPECT_EQ(res["interfaces"][1]["name"], "eth0");
    EXPECT_EQ(res["interfaces"][1]["sandbox"], pod.path());
    auto podLink = pod.exec({"ip", "-j", "link", "show", "eth0"});
    ASSERT_TRUE(podLink.ok()) << podLink.err;
    auto podLinkJson = json::parse(podLink.out).at(0);
    EXPECT_EQ(res["interfaces"][1]["mac"], podLinkJson["address"]);
    EXPECT_EQ(podLinkJson["mtu"], 1450) << "no gateway interface on the node and no MTU configured: 1500 - 50";
    EXPECT_EQ(res["ips"][0]["address"], "10.244.0.2/24");
    EXPECT_EQ(res["ips"][0]["gateway"], "10.244.0.1");
    EXPECT_EQ(res["ips"][0]["interface"], 1);
    EXPECT_EQ(res["routes"][0], (json{{"dst", "0.0.0.0/0"}, {"gw", "10.244.0.1"}}));

    // What the kernel, OVS, host-local and ethtool say.
    EXPECT_NE(pod.exec({"ip", "addr", "show", "eth0"}).out.find("inet 10.244.0.2/24"), std::string::npos);
    EXPECT_NE(pod.exec({"ip", "route", "show", "default"}).out.find("default via 10.244.0.1 dev eth0"), std::string::npos);
    EXPECT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "off");
    {
        kovs::Netns in(pod.path());
        EXPECT_FALSE(kovs::Ethtool().txChecksum("eth0"));
    }
    // The host end belongs to OVS: the node's kernel neither answers ARP on it
    // (the pod would learn the veth's MAC for its gateway, and the kernel
    // would route its packets next to OVS) nor has IPv6 on it.
    auto hostLink = json::parse(kovs::runChecked({"ip", "-j", "addr", "show", host})).at(0);
    auto flags = hostLink.at("flags").dump();
    EXPECT_NE(flags.find("NOARP"), std::string::npos) << flags;
    EXPECT_NE(flags.find("UP"), std::string::npos) << flags;
    EXPECT_TRUE(hostLink.at("addr_info").empty()) << hostLink;
    EXPECT_EQ(ports(), host + "\n");
    auto ids = portIds(host);
    for (const char* kv : {"cni-container-id=c1", "cni-ifname=eth0", "k8s-pod-namespace=default", "k8s-pod-name=web-0",
                           "kovs-owner=kovs-cni"}) {
        EXPECT_NE(ids.find(kv), std::string::npos) << kv << " not in " << ids;
    }
    // What the agent's flow table needs to deliver tunnelled packets to this pod.
    EXPECT_NE(ids.find("ip-address=\"10.244.0.2/24\""), std::string::npos) << ids;
    EXPECT_NE(ids.find("attached-mac=\"" + res["interfaces"][1]["mac"].get<std::string>() + "\""), std::string::npos) << ids;
    EXPECT_TRUE(pollUntil([&] { return ofport(host) > 0; })) << "vswitchd did not open " << host;
    EXPECT_EQ(leases(data.path(), "kovs-test"), std::vector<std::string>{"10.244.0.2"});

    // CHECK passes on what ADD left, and fails once the offload drifted back on.
    auto checkConf = mainConf();
    checkConf["prevResult"] = res;
    auto check = call(env("CHECK"), checkConf);
    EXPECT_EQ(check.exitCode, 0) << check.out << check.err;
    kovs::runChecked({"ip", "netns", "exec", pod.name(), "ethtool", "-K", "eth0", "tx", "on"});
    check = call(env("CHECK"), checkConf);
    EXPECT_EQ(check.exitCode, 1);
    EXPECT_EQ(check.code(), 101);
    EXPECT_NE(check.json().value("msg", "").find("tx-checksumming is on"), std::string::npos) << check.out;

    // DEL removes everything and is idempotent.
    auto delConf = mainConf();
    delConf["prevResult"] = res;
    for (int i = 0; i < 2; ++i) {
        auto del = call(env("DEL"), delConf);
        EXPECT_EQ(del.exitCode, 0) << "DEL #" << i << ": " << del.out << del.err;
        EXPECT_EQ(del.out, "") << "DEL prints nothing on success";
    }
    EXPECT_EQ(ports(), "");
    EXPECT_FALSE(linkExists("", host));
    EXPECT_FALSE(linkExists(pod.name(), "eth0"));
    EXPECT_TRUE(leases(data.path(), "kovs-test").empty());
    check = call(env("CHECK"), checkConf);
    EXPECT_EQ(check.code(), 101) << "CHECK after DEL must fail: " << check.out;
}

// A /32 lease (static IPAM, or an IPAM handing out single addresses): the
// kernel lists it without a prefix length, CHECK must still find it.
TEST_F(KovsCni, CheckFindsASingleAddressLease) {
    auto conf = mainConf();
    conf["ipam"] = {{"type", "static"}, {"addresses", json::array({{{"address", "10.244.0.9/32"}}})}};
    auto add = call(env("ADD"), conf);
    ASSERT_EQ(add.exitCode, 0) << add.out << add.err;
    EXPECT_EQ(add.json()["ips"][0]["address"], "10.244.0.9/32");
    conf["prevResult"] = add.json();
    auto check = call(env("CHECK"), conf);
    EXPECT_EQ(check.exitCode, 0) << check.out << check.err;
    EXPECT_EQ(call(env("DEL"), conf).exitCode, 0);
}

// With neither mtu nor uplinkMTU configured, a pod takes the MTU of the node
// interface holding its gateway address (gw0, which the agent sizes to a
// jumbo uplink); uplinkMTU, when given, still wins.
TEST_F(KovsCni, PodFollowsItsGatewayInterfaceMtu) {
    kovs::runProcess({"ip", "link", "del", "kcgw0"});
    kovs::runChecked({"ip", "link", "add", "kcgw0", "mtu", "8950", "type", "veth", "peer", "name", "kcgw0p", "mtu", "8950"});
    kovs::runChecked({"ip", "addr", "add", "10.244.0.1/24", "dev", "kcgw0"});
    kovs::runChecked({"ip", "link", "set", "kcgw0", "up"});
    auto podMtu = [&] { return json::parse(pod.exec({"ip", "-j", "link", "show", "eth0"}).out).at(0).at("mtu").get<int>(); };

    auto add = call(env("ADD"), mainConf("1.1.0"));
    EXPECT_EQ(add.exitCode, 0) << add.out << add.err;
    EXPECT_EQ(podMtu(), 8950);
    EXPECT_EQ(add.json()["interfaces"][1]["mtu"], 8950) << add.out;  // CNI 1.1 results carry it
    EXPECT_EQ(call(env("DEL"), mainConf("1.1.0")).exitCode, 0);

    auto fixed = mainConf();
    fixed["uplinkMTU"] = 1500;
    add = call(env("ADD"), fixed);
    EXPECT_EQ(add.exitCode, 0) << add.out << add.err;
    EXPECT_EQ(podMtu(), 1450);
    EXPECT_EQ(call(env("DEL"), fixed).exitCode, 0);
    kovs::runProcess({"ip", "link", "del", "kcgw0"});
}

TEST_F(KovsCni, DelSucceedsWhenTheNetnsIsGone) {
    auto add = call(env("ADD"), mainConf("1.1.0"));
    ASSERT_EQ(add.exitCode, 0) << add.out << add.err;
    EXPECT_EQ(add.json()["cniVersion"], "1.1.0");
    auto host = VethPair::hostNameFor("c1", "eth0");
    pod.remove();
    auto e = env("DEL");
    auto del = call(e, mainConf("1.1.0"));
    EXPECT_EQ(del.exitCode, 0) << del.out << del.err;
    e.erase("CNI_NETNS");
    del = call(e, mainConf("1.1.0"));
    EXPECT_EQ(del.exitCode, 0) << del.out << del.err;
    EXPECT_EQ(ports(), "");
    EXPECT_FALSE(linkExists("", host));
    EXPECT_TRUE(leases(data.path(), "kovs-test").empty());
}

TEST_F(KovsCni, GcRemovesOnlyStaleAttachments) {
    TestNetns pod2("kovs-cni-pod2");
    ASSERT_EQ(call(env("ADD", "keep"), mainConf("1.1.0")).exitCode, 0);
    auto e2 = env("ADD", "stale");
    e2["CNI_NETNS"] = pod2.path();
    auto add2 = call(e2, mainConf("1.1.0"));
    ASSERT_EQ(add2.exitCode, 0) << add2.out << add2.err;
    ASSERT_EQ(leases(data.path(), "kovs-test").size(), 2u);
    // A port kovs-cni does not own is never touched.
    ovs.vsctl({"add-port", "br-int", "foreign0", "--", "set", "Interface", "foreign0", "type=internal"});
    // Nor is one of another kovs network on the same bridge (its GC has its own valid list).
    TestNetns pod3("kovs-cni-pod3");
    auto other = mainConf("1.1.0");
    other["name"] = "kovs-other";
    auto e3 = env("ADD", "other");
    e3["CNI_NETNS"] = pod3.path();
    ASSERT_EQ(call(e3, other).exitCode, 0);

    auto gcConf = mainConf("1.1.0");
    gcConf["cni.dev/valid-attachments"] = json::array({{{"containerID", "keep"}, {"ifname", "eth0"}}});
    // A GC whose IPAM DEL fails (an IPAM plugin saying "try again later")
    // keeps the port, its record, so that the next GC finishes the job.
    TempDir bin;
    std::ofstream(bin.path() + "/host-local")
        << "#!/bin/sh\n[ \"$CNI_COMMAND\" = DEL ] && { echo '{\"code\":11,\"msg\":\"busy\"}'; exit 1; }\n"
           "exec /usr/lib/cni/host-local\n";
    std::filesystem::permissions(bin.path() + "/host-local", std::filesystem::perms::owner_all);
    auto gc = call({{"CNI_COMMAND", "GC"}, {"CNI_PATH", bin.path()}}, gcConf);
    EXPECT_NE(gc.exitCode, 0) << gc.out << gc.err;
    EXPECT_NE(ports().find(VethPair::hostNameFor("stale", "eth0")), std::string::npos) << "the record went with the failure";
    gc = call({{"CNI_COMMAND", "GC"}, {"CNI_PATH", "/usr/lib/cni"}}, gcConf);
    EXPECT_EQ(gc.exitCode, 0) << gc.out << gc.err;
    EXPECT_NE(ports().find(VethPair::hostNameFor("other", "eth0")), std::string::npos) << "GC removed another network's pod";
    EXPECT_EQ(leases(data.path(), "kovs-other").size(), 1u);

    auto keep = VethPair::hostNameFor("keep", "eth0");
    auto stale = VethPair::hostNameFor("stale", "eth0");
    EXPECT_NE(ports().find(keep), std::string::npos);
    EXPECT_NE(ports().find("foreign0"), std::string::npos);
    EXPECT_EQ(ports().find(stale), std::string::npos);
    EXPECT_TRUE(linkExists("", keep));
    EXPECT_FALSE(linkExists("", stale));
    EXPECT_FALSE(linkExists(pod2.name(), "eth0"));
    EXPECT_EQ(leases(data.path(), "kovs-test"), std::vector<std::string>{"10.244.0.2"});
}

TEST_F(KovsCni, StatusReportsBridgeAndOvsdbReadiness) {
    json conf = mainConf("1.1.0");
    std::map<std::string, std::string> e{{"CNI_COMMAND", "STATUS"}, {"CNI_PATH", "/usr/lib/cni"}};
    auto st = call(e, conf);
    EXPECT_EQ(st.exitCode, 0) << st.out << st.err;
    EXPECT_EQ(st.out, "");

    conf["bridge"] = "br-missing";
    st = call(e, conf);
    EXPECT_EQ(st.exitCode, 1);
    EXPECT_EQ(st.code(), 50) << st.out;

    ovs.stopOvsdb();
    st = call(e, mainConf("1.1.0"));
    EXPECT_EQ(st.code(), 50) << st.out;
    EXPECT_NE(st.json().value("msg", "").find("not reachable"), std::string::npos) << st.out;
}

// Chained after a reference plugin: offload off in the pod, result untouched.
class KovsCniChained : public KovsCni, public ::testing::WithParamInterface<std::string> {};

TEST_P(KovsCniChained, TurnsOffloadOffAndPassesPrevResultThrough) {
    auto plugin = GetParam();
    json ref = {{"cniVersion", "1.0.0"}, {"name", "chain"}, {"type", plugin}, {"ipam", ipam()}};
    if (plugin == "bridge") ref["bridge"] = "kovsbr0";
    auto e = env("ADD");
    auto first = runCni("/usr/lib/cni/" + plugin, e, ref.dump());
    ASSERT_EQ(first.exitCode, 0) << first.out << first.err;
    auto prev = first.json();
    ASSERT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "on") << plugin << " leaves the default on";

    json conf = {{"cniVersion", "1.0.0"}, {"name", "chain"}, {"type", "kovs"}, {"prevResult", prev}};
    auto add = call(e, conf);
    ASSERT_EQ(add.exitCode, 0) << add.out << add.err;
    EXPECT_EQ(add.json(), prev) << "prevResult must pass through unchanged";
    EXPECT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "off");
    // Interfaces without a sandbox (the host ends) are left alone.
    for (const auto& itf : prev["interfaces"]) {
        if (!itf.contains("sandbox")) {
            EXPECT_EQ(ethtoolFeature("", itf["name"], "tx-checksumming"), "on") << itf;
        }
    }
    EXPECT_EQ(call(env("CHECK"), conf).exitCode, 0);
    auto del = call(env("DEL"), conf);
    EXPECT_EQ(del.exitCode, 0) << del.out;
    EXPECT_EQ(ports(), "") << "chained mode touches no OVS state";
    auto refDel = runCni("/usr/lib/cni/" + plugin, env("DEL"), ref.dump());
    EXPECT_EQ(refDel.exitCode, 0) << refDel.out;
    if (plugin == "bridge") kovs::runProcess({"ip", "link", "del", "kovsbr0"});
}

INSTANTIATE_TEST_SUITE_P(Reference, KovsCniChained, ::testing::Values("ptp", "bridge"));

// Every rejected ADD leaves no veth, no OVS port and no lease behind.
TEST_F(KovsCni, BadInputLeavesNoState) {
    auto hostBefore = linkNames("");
    auto podBefore = linkNames(pod.name());
    auto base = mainConf();
    auto with = [&](const char* key, json value) {
        auto c = base;
        c[key] = value;
        return c;
    };
    auto ipamWith = [&](const char* key, json value) {
        auto c = base;
        c["ipam"][key] = value;
        return c;
    };
    auto envWith = [&](const char* key, const std::string& value) {
        auto e = env("ADD");
        if (value.empty()) e.erase(key);
        else e[key] = value;
        return e;
    };
    // A port of that name already on another bridge: the clash is found only
    // at the last step (OVSDB), after IPAM, veth and addresses were done.
    auto clashId = std::string("clash");
    auto clashName = VethPair::hostNameFor(clashId, "eth0");

    struct Case {
        const char* name;
        std::map<std::string, std::string> env;
        std::string stdinData;
        int code;
    };
    std::vector<Case> cases = {
        {"missing CNI_COMMAND", envWith("CNI_COMMAND", ""), base.dump(), 4},
        {"missing CNI_CONTAINERID", envWith("CNI_CONTAINERID", ""), base.dump(), 4},
        {"missing CNI_NETNS", envWith("CNI_NETNS", ""), base.dump(), 4},
        {"netns does not exist", envWith("CNI_NETNS", "/run/netns/nope"), base.dump(), 4},
        {"ifname > 15 bytes", envWith("CNI_IFNAME", "eth0-is-too-long"), base.dump(), 4},
        {"missing CNI_PATH", envWith("CNI_PATH", ""), base.dump(), 4},
        {"unparsable stdin", env("ADD"), "{\"cniVersion\": ", 6},
        {"unsupported cniVersion", env("ADD"), with("cniVersion", "0.2.0").dump(), 1},
        {"unsupported field", env("ADD"), with("vlan", 5).dump(), 2},
        {"bad mtu", env("ADD"), with("mtu", 20).dump(), 7},
        {"bad bridge name", env("ADD"), with("bridge", "a/b").dump(), 7},
        {"IPAM plugin missing", env("ADD"), ipamWith("type", "no-such-ipam").dump(), 7},
        {"IPAM plugin failing", env("ADD"), ipamWith("ranges", json::array({json::array({{{"subnet", "not-a-cidr"}}})})).dump(), 0},
        {"OVS down", env("ADD"), with("ovsdb", "unix:" + data.path() + "/no-db.sock").dump(), 11},
        {"bridge missing", env("ADD"), with("bridge", "br-nope").dump(), 11},
        {"ifname taken in pod", envWith("CNI_IFNAME", "taken0"), base.dump(), 100},
        {"port name taken in OVS", envWith("CNI_CONTAINERID", clashId), base.dump(), 100},
    };
    kovs::runChecked({"ip", "-n", pod.name(), "link", "add", "taken0", "type", "veth", "peer", "name", "taken1"});
    ovs.vsctl({"add-br", "br-other", "--", "set", "bridge", "br-other", "datapath_type=netdev"});
    ovs.vsctl({"add-port", "br-other", clashName, "--", "set", "Interface", clashName, "type=patch", "options:peer=none"});
    podBefore = linkNames(pod.name());
    hostBefore = linkNames("");
    auto portsBefore = ovs.vsctl({"--columns=name", "list", "Port"});

    for (const auto& c : cases) {
        auto r = runCni(cni, c.env, c.stdinData);
        EXPECT_EQ(r.exitCode, 1) << c.name << ": " << r.out << r.err;
        json err;
        ASSERT_NO_THROW(err = r.json()) << c.name;
        if (c.code) {
            EXPECT_EQ(err.value("code", -1), c.code) << c.name << ": " << r.out;
        } else {
            EXPECT_GT(err.value("code", -1), 0) << c.name << ": " << r.out;
        }
        EXPECT_FALSE(err.value("msg", "").empty()) << c.name;
        EXPECT_TRUE(err.contains("cniVersion")) << c.name;
        EXPECT_EQ(linkNames(""), hostBefore) << c.name << ": host links changed";
        EXPECT_EQ(linkNames(pod.name()), podBefore) << c.name << ": pod links changed";
        EXPECT_EQ(ovs.vsctl({"--columns=name", "list", "Port"}), portsBefore) << c.name << ": OVS ports changed";
        EXPECT_TRUE(leases(data.path(), "kovs-test").empty()) << c.name << ": lease left behind";
    }
}

namespace {

// A TCP connection from inside `netns` to addr:port, carrying `payload`;
// returns what the server read (empty when the connection never came up).
std::string tcpExchange(const std::string& netns, const std::string& addr, uint16_t port, const std::string& payload,
                        int timeoutMs) {
    kovs::UniqueFd server(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int one = 1;
    ::setsockopt(server.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    ::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
    if (::bind(server.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) kovs::throwErrno("bind " + addr);
    if (::listen(server.get(), 4) < 0) kovs::throwErrno("listen");

    kovs::UniqueFd client;
    {
        kovs::Netns in(netns);
        client.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    }
    ::connect(client.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    pollfd pc{client.get(), POLLOUT, 0};
    if (::poll(&pc, 1, timeoutMs) <= 0) return "";
    int soErr = 0;
    socklen_t len = sizeof soErr;
    ::getsockopt(client.get(), SOL_SOCKET, SO_ERROR, &soErr, &len);
    if (soErr != 0) return "";
    if (::send(client.get(), payload.data(), payload.size(), MSG_NOSIGNAL) < 0) return "";
    pollfd ps{server.get(), POLLIN, 0};
    if (::poll(&ps, 1, timeoutMs) <= 0) return "";
    kovs::UniqueFd conn(::accept4(server.get(), nullptr, nullptr, SOCK_CLOEXEC));
    std::string got;
    while (got.size() < payload.size()) {
        pollfd pr{conn.get(), POLLIN, 0};
        if (::poll(&pr, 1, timeoutMs) <= 0) break;
        char buf[4096];
        auto n = ::recv(conn.get(), buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
    }
    return got;
}

}  // namespace

// Why kovs-cni exists: through the userspace datapath, a pod whose veth
// leaves TCP checksums to offload cannot talk to gw0.
TEST_F(KovsCni, PodReachesGw0OnlyWithOffloadOff) {
    ovs.vsctl({"add-port", "br-int", "gw0", "--", "set", "Interface", "gw0", "type=internal"});
    ASSERT_TRUE(pollUntil([&] { return linkExists("", "gw0"); })) << "vswitchd did not create gw0";
    kovs::runChecked({"ip", "addr", "add", "10.244.0.1/24", "dev", "gw0"});
    kovs::runChecked({"ip", "link", "set", "gw0", "up"});
    kovs::runChecked({"ethtool", "-K", "gw0", "tx", "off"});

    auto add = call(env("ADD"), mainConf());
    ASSERT_EQ(add.exitCode, 0) << add.out << add.err;
    auto host = VethPair::hostNameFor("c1", "eth0");
    ASSERT_TRUE(pollUntil([&] { return ofport(host) > 0; })) << "vswitchd did not open " << host;
    ASSERT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "off");

    // With offload off (as ADD left it) TCP works; the first try may race the ARP.
    const std::string payload(64 * 1024, 'k');
    std::string got;
    pollUntil([&] { return (got = tcpExchange(pod.path(), "10.244.0.1", 15201, payload, 2000)) == payload; },
              std::chrono::seconds(10), std::chrono::milliseconds(100));
    EXPECT_EQ(got.size(), payload.size()) << "pod -> gw0 TCP with tx-checksumming off";

    // Forced back on: the checksums the pod left to offload are never filled
    // in by the userspace datapath, and gw0's kernel drops the segments.
    {
        kovs::Netns in(pod.path());
        kovs::Ethtool().setTxChecksum("eth0", true);
    }
    ASSERT_EQ(ethtoolFeature(pod.name(), "eth0", "tx-checksumming"), "on");
    got = tcpExchange(pod.path(), "10.244.0.1", 15202, payload, 3000);
    EXPECT_NE(got.size(), payload.size()) << "pod -> gw0 TCP unexpectedly worked with tx-checksumming on";
    RecordProperty("bytes_with_offload_on", static_cast<int>(got.size()));
}
