// Every input kovs-cni rejects gets a CNI error with a code, and leaves no
// veth, no OVS port and no lease behind.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "base/Process.hpp"
#include "cni/VethPair.hpp"
#include "tests/integration/cni/CniTestSupport.hpp"

using nlohmann::json;
using namespace kovs::test;
using kovs::cni::VethPair;

namespace {
// `levels` arrays, one in the next.
json nested(int levels) {
    json v = json::array();
    for (int i = 1; i < levels; ++i) v = json::array({std::move(v)});
    return v;
}
// `conf` (or `outer` with `conf` as its ipam) with KEY holding arrays nested
// 100,000 deep, as text: too deep for json to build and dump on the test's stack.
std::string deepIn(const json& conf, const std::string& key, const json* outer = nullptr) {
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    std::string inner = conf.dump();
    inner.insert(inner.size() - 1, ",\"" + key + "\":" + deep);
    if (!outer) return inner;
    json o = *outer;
    o["ipam"] = "@";
    std::string text = o.dump();
    auto at = text.find("\"@\"");
    return text.replace(at, 3, inner);
}
}  // namespace

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
        // Every namespace file is on nsfs: a mount namespace passed the
        // nsfs check and failed only at setns, after IPAM had leased.
        {"netns is a mount namespace", envWith("CNI_NETNS", "/proc/self/ns/mnt"), base.dump(), 4},
        {"netns is a PID namespace", envWith("CNI_NETNS", "/proc/self/ns/pid"), base.dump(), 4},
        {"ifname > 15 bytes", envWith("CNI_IFNAME", "eth0-is-too-long"), base.dump(), 4},
        {"missing CNI_PATH", envWith("CNI_PATH", ""), base.dump(), 4},
        {"unparsable stdin", env("ADD"), "{\"cniVersion\": ", 6},
        // 100,000 levels in an unknown key and in ipam: kovs-cni died with
        // SIGSEGV (exit 139, no CNI error) when it dumped the config.
        {"nested 100000 deep", env("ADD"), deepIn(base, "x-junk"), 6},
        {"nested 100000 deep in ipam", env("ADD"), deepIn(base["ipam"], "x-junk", &base), 6},
        {"nested 65 deep", env("ADD"), with("x-junk", nested(64)).dump(), 6},
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
