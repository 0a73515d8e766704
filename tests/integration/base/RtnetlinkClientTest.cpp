// RtnetlinkClient and IngressRedirect on real links in the test's private
// netns; `ip -j` and `tc` are the independent witnesses of what they did,
// and ping is the witness of a redirect.
#include "base/RtnetlinkClient.hpp"

#include <fcntl.h>
#include <sys/mount.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <linux/if_addr.h>

#include <nlohmann/json.hpp>

#include "base/Error.hpp"
#include "base/IngressRedirect.hpp"
#include "base/LinkIsolation.hpp"
#include "base/Netns.hpp"
#include "base/Process.hpp"
#include "base/UniqueFd.hpp"
#include "tests/support/Poll.hpp"
#include "tests/support/TestNetns.hpp"

using kovs::AddressInfo;
using kovs::IpPrefix;
using kovs::Netns;
using kovs::RouteInfo;
using kovs::RtnetlinkClient;
using kovs::runChecked;
using kovs::runProcess;
using kovs::test::TestNetns;
using nlohmann::json;

namespace {

json ipJson(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"ip", "-j"};
    argv.insert(argv.end(), args.begin(), args.end());
    return json::parse(runChecked(argv));
}

struct Veth {
    Veth() {
        runProcess({"ip", "link", "del", "rt-a"});
        rtnl.createVeth("rt-a", "rt-b", 9000);
    }
    ~Veth() { runProcess({"ip", "link", "del", "rt-a"}); }
    RtnetlinkClient rtnl;
};

AddressInfo address(const std::string& text) {
    AddressInfo a;
    a.local = IpPrefix::parse(text);
    return a;
}

}  // namespace

// kovs's agent pod is not privileged: the runtime mounts /proc/sys read-only
// for it, so disable_ipv6 cannot be written. On a dual-stack kind node that
// stopped the agent at start-up ("kovs-up0: cannot disable IPv6"). The link
// keeps IPv6 then, but never makes an address: up, it has none, and counts
// as isolated.
TEST(RtnetlinkClient, WhereProcSysIsReadOnlyALinkIsIsolatedWithoutIpv6Addresses) {
    Veth v;
    ASSERT_EQ(::mount("/proc/sys", "/proc/sys", nullptr, MS_BIND, nullptr), 0) << std::strerror(errno);
    struct Unmount {
        ~Unmount() { ::umount2("/proc/sys", MNT_DETACH); }
    } unmount;
    ASSERT_EQ(::mount(nullptr, "/proc/sys", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr), 0) << std::strerror(errno);
    ASSERT_FALSE(std::ofstream("/proc/sys/net/ipv6/conf/rt-a/disable_ipv6") << "1\n") << "/proc/sys is still writable";

    kovs::isolateLink("rt-a");
    v.rtnl.setUp("rt-a", true);
    v.rtnl.setUp("rt-b", true);
    bool peerHasLinkLocal = kovs::test::pollUntil([&] {
        for (const auto& a : v.rtnl.addresses("rt-b"))
            if (a.local.family == AF_INET6) return true;
        return false;
    }, std::chrono::seconds(5));
    ASSERT_TRUE(peerHasLinkLocal) << "IPv6 is on in this namespace: the peer, not isolated, makes its link-local";
    for (const auto& a : v.rtnl.addresses("rt-a")) EXPECT_NE(a.local.family, AF_INET6) << a.local.str();
    EXPECT_TRUE(kovs::linkIsolated("rt-a"));
    EXPECT_FALSE(kovs::isolateLink("rt-a")) << "already isolated: nothing to change";

    // One that was up with a link-local before (an older kovs-cni's pod) loses it.
    EXPECT_FALSE(kovs::linkIsolated("rt-b"));
    EXPECT_TRUE(kovs::isolateLink("rt-b"));
    for (const auto& a : v.rtnl.addresses("rt-b")) EXPECT_NE(a.local.family, AF_INET6) << a.local.str();
    EXPECT_TRUE(kovs::linkIsolated("rt-b"));
}

TEST(RtnetlinkClient, LinksAreCreatedChangedAndRemoved) {
    Veth v;
    auto a = v.rtnl.requireLink("rt-a");
    auto b = v.rtnl.requireLink("rt-b");
    EXPECT_EQ(a.kind, "veth");
    EXPECT_EQ(a.peer, b.index);
    EXPECT_EQ(a.mtu, 9000u);
    EXPECT_FALSE(a.up());

    EXPECT_TRUE(kovs::isolateLink("rt-a"));
    EXPECT_FALSE(kovs::isolateLink("rt-a")) << "already isolated: nothing to change";
    EXPECT_TRUE(kovs::linkIsolated("rt-a"));
    EXPECT_FALSE(kovs::linkIsolated("rt-b"));
    v.rtnl.setMac("rt-a", "02:00:00:00:00:0a");
    v.rtnl.setMtu("rt-a", 1500);
    v.rtnl.setUp("rt-a", true);
    v.rtnl.setUp("rt-b", true);
    auto seen = ipJson({"addr", "show", "dev", "rt-a"}).at(0);
    EXPECT_EQ(seen.at("address"), "02:00:00:00:00:0a");
    EXPECT_EQ(seen.at("mtu"), 1500);
    auto flags = seen.at("flags");
    EXPECT_NE(std::find(flags.begin(), flags.end(), "NOARP"), flags.end()) << flags.dump();
    EXPECT_NE(std::find(flags.begin(), flags.end(), "UP"), flags.end()) << flags.dump();
    EXPECT_EQ(runChecked({"cat", "/proc/sys/net/ipv6/conf/rt-a/disable_ipv6"}), "1\n");
    EXPECT_TRUE(seen.at("addr_info").empty()) << "no IPv6 link-local address: " << seen.at("addr_info").dump();
    EXPECT_EQ(v.rtnl.requireLink("rt-a").mac, "02:00:00:00:00:0a");

    v.rtnl.setUp("rt-a", false);
    EXPECT_FALSE(v.rtnl.requireLink("rt-a").up());
    v.rtnl.deleteLink("rt-a");
    EXPECT_FALSE(v.rtnl.link("rt-b")) << "the peer goes with it";
    EXPECT_NO_THROW(v.rtnl.deleteLink("rt-a")) << "deleting what is gone is fine";
    try {
        v.rtnl.requireLink("rt-a");
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_STREQ(e.what(), "link rt-a: no such device");
    }
    EXPECT_THROW(v.rtnl.setMtu("rt-a", 1500), kovs::Error);
}

TEST(RtnetlinkClient, AddressesKeepFlagsBroadcastAndLabelsAcrossLinks) {
    Veth v;
    runChecked({"ip", "addr", "add", "192.0.2.2/24", "brd", "192.0.2.255", "dev", "rt-a"});
    runChecked({"ip", "addr", "add", "192.0.2.3/24", "dev", "rt-a", "label", "rt-a:1"});
    runChecked({"ip", "addr", "add", "2001:db8::2/64", "dev", "rt-a", "nodad", "noprefixroute"});
    auto read = v.rtnl.addresses("rt-a");
    ASSERT_EQ(read.size(), 3u);
    EXPECT_EQ(read[0].str(), "192.0.2.2/24");
    EXPECT_EQ(read[0].broadcast->addressString(), "192.0.2.255");
    EXPECT_EQ(read[1].label, "rt-a:1");
    EXPECT_TRUE(read[1].flags & IFA_F_SECONDARY);
    EXPECT_TRUE(read[2].flags & IFA_F_NODAD);
    EXPECT_TRUE(read[2].flags & IFA_F_NOPREFIXROUTE);

    // Moved to the peer: the same flags and broadcast, the label renamed.
    for (const auto& a : read) v.rtnl.addAddress("rt-b", a);
    auto moved = ipJson({"addr", "show", "dev", "rt-b"}).at(0).at("addr_info");
    ASSERT_EQ(moved.size(), 3u) << moved.dump();
    EXPECT_EQ(moved[0].at("broadcast"), "192.0.2.255");
    EXPECT_EQ(moved[1].at("label"), "rt-b:1");
    EXPECT_EQ(moved[1].value("secondary", false), true);
    EXPECT_EQ(moved[2].value("nodad", false), true);
    EXPECT_EQ(moved[2].value("noprefixroute", false), true);
    EXPECT_NO_THROW(v.rtnl.addAddress("rt-b", read[0])) << "adding what is there is fine";

    for (const auto& a : read) v.rtnl.deleteAddress("rt-b", a);
    EXPECT_TRUE(ipJson({"addr", "show", "dev", "rt-b"}).at(0).at("addr_info").empty());
    EXPECT_NO_THROW(v.rtnl.deleteAddress("rt-b", read[0])) << "removing what is gone is fine";
}

// The tunnel job's cover address (tunnel/TunnelPlanner.hpp isCoverAddress):
// the node's /32 once more as /0. libnl will not build a request of prefix
// length 0 by itself; added and removed, it leaves the /32 as it was and
// makes no route.
TEST(RtnetlinkClient, AnAddressOfPrefixLengthZeroComesAndGoesAloneWithoutARoute) {
    Veth v;
    runChecked({"ip", "addr", "add", "192.0.2.5/32", "dev", "rt-a"});
    AddressInfo cover;
    cover.local = IpPrefix::parse("192.0.2.5/0");
    cover.scope = RT_SCOPE_HOST;
    cover.flags = IFA_F_NOPREFIXROUTE;
    EXPECT_TRUE(v.rtnl.addAddress("rt-a", cover));
    EXPECT_FALSE(v.rtnl.addAddress("rt-a", cover)) << "there already";
    auto read = v.rtnl.addresses("rt-a");
    ASSERT_EQ(read.size(), 2u);
    auto c = std::find_if(read.begin(), read.end(), [](const AddressInfo& a) { return a.local.prefixLen == 0; });
    ASSERT_NE(c, read.end());
    EXPECT_EQ(c->str(), "192.0.2.5/0");
    EXPECT_EQ(c->scope, RT_SCOPE_HOST);
    EXPECT_TRUE(c->flags & IFA_F_NOPREFIXROUTE);
    EXPECT_TRUE(v.rtnl.routes("rt-a").empty()) << "a /0 noprefixroute address makes no route";
    auto local = runChecked({"ip", "-4", "route", "show", "table", "local", "dev", "rt-a"});
    EXPECT_EQ(local.find("broadcast"), std::string::npos) << local;

    v.rtnl.deleteAddress("rt-a", cover);
    read = v.rtnl.addresses("rt-a");
    ASSERT_EQ(read.size(), 1u);
    EXPECT_EQ(read[0].str(), "192.0.2.5/32") << "the /32 stays";
}

TEST(RtnetlinkClient, RoutesKeepGatewayMetricProtocolSourceAndOnlink) {
    Veth v;
    v.rtnl.setUp("rt-a", true);
    v.rtnl.setUp("rt-b", true);
    v.rtnl.addAddress("rt-a", address("192.0.2.2/24"));
    runChecked({"ip", "route", "add", "198.51.100.0/24", "via", "192.0.2.1", "dev", "rt-a", "metric", "50", "proto", "static",
                "src", "192.0.2.2"});
    runChecked({"ip", "route", "add", "203.0.113.0/24", "via", "10.9.9.9", "dev", "rt-a", "onlink"});
    auto routes = v.rtnl.routes("rt-a");
    auto find = [&](const std::string& dst) {
        for (const auto& r : routes)
            if (r.dst.str() == dst) return r;
        throw kovs::Error("no route " + dst);
    };
    auto viaSrc = find("198.51.100.0/24");
    EXPECT_EQ(viaSrc.str(), "198.51.100.0/24 via 192.0.2.1 metric 50 proto static src 192.0.2.2");
    auto onlink = find("203.0.113.0/24");
    EXPECT_TRUE(onlink.onlink);

    // Moved to rt-b (which needs the source address too), as the uplink does.
    v.rtnl.addAddress("rt-b", address("192.0.2.2/24"));
    for (const auto& r : {viaSrc, onlink}) {
        v.rtnl.deleteRoute("rt-a", r);
        v.rtnl.addRoute("rt-b", r);
    }
    auto seen = ipJson({"route", "show", "dev", "rt-b"});
    auto witness = [&](const std::string& dst) {
        for (const auto& r : seen)
            if (r.at("dst") == dst) return r;
        return json();
    };
    auto w = witness("198.51.100.0/24");
    EXPECT_EQ(w.value("gateway", ""), "192.0.2.1") << seen.dump();
    EXPECT_EQ(w.value("protocol", ""), "static") << seen.dump();
    EXPECT_EQ(w.value("prefsrc", ""), "192.0.2.2") << seen.dump();
    EXPECT_EQ(w.value("metric", 0), 50) << seen.dump();
    EXPECT_EQ(witness("203.0.113.0/24").value("flags", json()), json({"onlink"})) << seen.dump();
    EXPECT_FALSE(v.rtnl.addRoute("rt-b", viaSrc)) << "adding what is there is fine, and says so";
    // The same destination and metric through another link is a conflict, not a second route.
    try {
        v.rtnl.addRoute("rt-a", viaSrc);
        FAIL() << "a second route with the same destination and metric was accepted";
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("route 198.51.100.0/24 via 192.0.2.1 metric 50 proto static src 192.0.2.2 dev rt-a: add"),
                  std::string::npos)
            << e.what();
    }
    v.rtnl.deleteRoute("rt-b", viaSrc);
    EXPECT_NO_THROW(v.rtnl.deleteRoute("rt-b", viaSrc)) << "removing what is gone is fine";

    // The default route reads back with a zero-length destination.
    runChecked({"ip", "-6", "route", "add", "default", "via", "fe80::1", "dev", "rt-b"});
    bool found = false;
    for (const auto& r : v.rtnl.routes("rt-b"))
        if (r.family() == AF_INET6 && r.dst.prefixLen == 0) found = r.str() == "default via fe80::1 metric 1024 proto boot";
    EXPECT_TRUE(found);
}

// A multipath route is seen once per next hop through the link, marked as
// such, and never added or deleted by one next hop (the gateway guard and
// the uplink leave such routes alone).
TEST(RtnetlinkClient, AMultipathRouteIsSeenPerNextHopAndNeverChangedByOne) {
    Veth v;
    v.rtnl.setUp("rt-a", true);
    v.rtnl.setUp("rt-b", true);
    v.rtnl.addAddress("rt-a", address("192.0.2.2/24"));
    v.rtnl.addAddress("rt-b", address("198.51.100.2/24"));
    runChecked({"ip", "route", "add", "203.0.113.0/24", "proto", "static", "nexthop", "via", "192.0.2.1", "dev", "rt-a", "nexthop",
                "via", "198.51.100.1", "dev", "rt-b"});
    runChecked({"ip", "route", "add", "203.0.114.0/24", "via", "192.0.2.7", "dev", "rt-a"});
    std::vector<std::string> seen;
    for (const auto& r : v.rtnl.routes("rt-a"))
        if (r.dst.str().rfind("203.0.11", 0) == 0) seen.push_back(r.str());
    EXPECT_EQ(seen, (std::vector<std::string>{"203.0.113.0/24 via 192.0.2.1 proto static (a next hop of a multipath route)",
                                              "203.0.114.0/24 via 192.0.2.7 proto boot"}));
    for (const auto& r : v.rtnl.routes("rt-b")) {
        if (r.dst.str() != "203.0.113.0/24") continue;
        EXPECT_TRUE(r.multipath);
        EXPECT_THROW(v.rtnl.deleteRoute("rt-b", r), kovs::Error);
        EXPECT_THROW(v.rtnl.addRoute("rt-b", r), kovs::Error);
    }
    EXPECT_EQ(ipJson({"route", "show", "203.0.113.0/24"}).at(0).at("nexthops").size(), 2u) << "the route is as it was";
}

// The id this netns gives another is what a veth leading there reports as
// its IFLA_LINK_NETNSID (how the offload job finds another CNI's pods); `ip`
// is the witness.
TEST(RtnetlinkClient, NetnsIdIsWhatAVethIntoTheNamespaceNames) {
    TestNetns one("rt-nsid-1"), two("rt-nsid-2");
    RtnetlinkClient rtnl;
    EXPECT_EQ(rtnl.netnsId(Netns::open(one.path()).get()), std::nullopt) << "no link leads there yet, so no id";

    runChecked({"ip", "link", "add", "rt-ns1", "type", "veth", "peer", "name", "eth0", "netns", one.name()});
    runChecked({"ip", "link", "add", "rt-ns2", "type", "veth", "peer", "name", "eth0", "netns", two.name()});
    auto linkNetnsId = [](const std::string& dev) {
        auto l = ipJson({"link", "show", "dev", dev}).at(0);
        EXPECT_TRUE(l.contains("link_netnsid")) << l.dump();
        return l.value("link_netnsid", -1);
    };
    int want1 = linkNetnsId("rt-ns1"), want2 = linkNetnsId("rt-ns2");
    ASSERT_GE(want1, 0);
    ASSERT_GE(want2, 0);
    ASSERT_NE(want1, want2);
    EXPECT_EQ(rtnl.requireLink("rt-ns1").peerNetnsId, want1);
    int dumped = 0;
    for (const auto& l : rtnl.links()) {
        if (l.name == "rt-ns2") dumped = l.peerNetnsId.value_or(-1);
        if (l.name == "lo") {
            EXPECT_EQ(l.peerNetnsId, std::nullopt);
        }
    }
    EXPECT_EQ(dumped, want2) << "the dump reads IFLA_LINK_NETNSID too";
    // Asked again and again on one socket, between other requests: every
    // reply is the one to its own request.
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(rtnl.netnsId(Netns::open(one.path()).get()), want1);
        EXPECT_EQ(rtnl.netnsId(Netns::open(two.path()).get()), want2);
        EXPECT_EQ(rtnl.requireLink("rt-ns1").kind, "veth");
    }
    auto listed = ipJson({"netns", "list-id"});
    auto listedId = [&](const std::string& name) {
        for (const auto& e : listed)
            if (e.value("name", "") == name) return e.value("nsid", -1);
        return -1;
    };
    EXPECT_EQ(listedId(one.name()), want1) << listed.dump();
    EXPECT_EQ(listedId(two.name()), want2) << listed.dump();

    // A file that is not a network namespace: the kernel's error, named.
    kovs::UniqueFd notNetns(::open("/", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(notNetns);
    try {
        rtnl.netnsId(notNetns.get());
        FAIL() << "an fd of / was taken for a netns";
    } catch (const kovs::Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("RTM_GETNSID: ", 0), 0u) << e.what();
    }
    EXPECT_EQ(rtnl.netnsId(Netns::open(one.path()).get()), want1) << "the socket still answers after an error";
}

// Two namespaces wired only through a pair of redirects on this netns's
// links: they reach each other exactly while the redirects are there.
TEST(IngressRedirect, JoinsTwoLinksAndComesOffCleanly) {
    TestNetns left("rt-left"), right("rt-right");
    RtnetlinkClient rtnl;
    runChecked({"ip", "link", "add", "rt-l", "type", "veth", "peer", "name", "eth0", "netns", left.name()});
    runChecked({"ip", "link", "add", "rt-r", "type", "veth", "peer", "name", "eth0", "netns", right.name()});
    for (const auto& [ns, ip] : {std::pair{left.name(), "10.9.0.1/24"}, {right.name(), "10.9.0.2/24"}}) {
        runChecked({"ip", "-n", ns, "addr", "add", ip, "dev", "eth0"});
        runChecked({"ip", "-n", ns, "link", "set", "eth0", "up"});
    }
    rtnl.setUp("rt-l", true);
    rtnl.setUp("rt-r", true);
    auto ping = [&] { return left.exec({"ping", "-c1", "-W1", "10.9.0.2"}).ok(); };
    EXPECT_FALSE(ping()) << "nothing joins them yet";

    kovs::addIngressRedirect(rtnl, "rt-l", "rt-r");
    kovs::addIngressRedirect(rtnl, "rt-r", "rt-l");
    EXPECT_EQ(kovs::ingressRedirectTarget(rtnl, "rt-l"), rtnl.requireLink("rt-r").index);
    EXPECT_TRUE(kovs::test::pollUntil(ping, std::chrono::seconds(5))) << runChecked({"tc", "filter", "show", "dev", "rt-l", "ingress"});
    EXPECT_NO_THROW(kovs::addIngressRedirect(rtnl, "rt-l", "rt-r")) << "again: nothing to do";
    EXPECT_NE(runChecked({"tc", "filter", "show", "dev", "rt-l", "ingress"}).find("Egress Redirect to device rt-r"), std::string::npos);

    // Someone else's filter on the same link survives ours going.
    runChecked({"tc", "filter", "add", "dev", "rt-r", "ingress", "pref", "7", "protocol", "ip", "u32", "match", "u32", "0", "0",
                "classid", "1:1"});
    kovs::removeIngressRedirect(rtnl, "rt-l");
    kovs::removeIngressRedirect(rtnl, "rt-r");
    EXPECT_FALSE(kovs::ingressRedirectTarget(rtnl, "rt-l"));
    EXPECT_FALSE(ping());
    EXPECT_EQ(runChecked({"tc", "qdisc", "show", "dev", "rt-l"}).find("clsact"), std::string::npos) << "an empty clsact goes";
    EXPECT_NE(runChecked({"tc", "filter", "show", "dev", "rt-r", "ingress"}).find("pref 7"), std::string::npos);
    EXPECT_NO_THROW(kovs::removeIngressRedirect(rtnl, "rt-l")) << "removing what is gone is fine";

    // A foreign `ingress` qdisc cannot be shared: a clear error naming both links.
    runChecked({"tc", "qdisc", "add", "dev", "rt-l", "ingress"});
    try {
        kovs::addIngressRedirect(rtnl, "rt-l", "rt-r");
        FAIL();
    } catch (const kovs::Error& e) {
        EXPECT_NE(std::string(e.what()).find("redirect rt-l ingress -> rt-r egress: rt-l has a tc 'ingress' qdisc"), std::string::npos)
            << e.what();
    }
    runProcess({"ip", "link", "del", "rt-l"});
    runProcess({"ip", "link", "del", "rt-r"});
}
