// KubernetesPeerSource against a local HTTPS server speaking the real Node
// list/watch shapes: list, watch from the list's resourceVersion with
// bookmarks, BOOKMARK, abrupt close, ERROR 410 Gone, garbage and truncated
// lines, wrong credentials, and Nodes that do not decode among good ones.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "base/EventLoop.hpp"
#include "base/Process.hpp"
#include "tests/integration/kube/KubeApiTestServer.hpp"
#include "peers/KubernetesPeerSource.hpp"

using namespace kovs::peers;
using kovs::kube::KubeCredentials;
using kovs::kube::kubeconfigCredentials;
using kovs::test::KubeApiTestServer;
using kovs::test::SelfSignedCert;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

json node(const std::string& name, const std::string& ip, const std::string& rv, json podCIDRs = json::array()) {
    return {{"kind", "Node"},
            {"apiVersion", "v1"},
            {"metadata", {{"name", name}, {"resourceVersion", rv}, {"uid", name + "-uid"}}},
            {"spec", {{"podCIDRs", podCIDRs}}},
            {"status",
             {{"addresses", {{{"type", "InternalIP"}, {"address", ip}}, {{"type", "Hostname"}, {"address", name}}}}}}};
}

kovs::kube::ListWatchOptions fastOptions() {
    kovs::kube::ListWatchOptions o;
    o.backoffInitial = 20ms;
    o.backoffMax = 200ms;
    return o;
}

// Collects reported sets on the loop thread. The source reports this node's
// own Node too (the peer filter reads its addresses); "self" is kept apart so
// the peers can be counted.
struct Reports {
    std::vector<PeerSet> sets;
    std::vector<std::vector<RejectedPeer>> unreadable;
    std::optional<Peer> self;
    void add(PeerSet s, const std::vector<RejectedPeer>& u) {
        if (auto it = s.find("self"); it != s.end()) {
            self = it->second;
            s.erase(it);
        }
        sets.push_back(std::move(s));
        unreadable.push_back(u);
    }
    const PeerSet& last() const { return sets.back(); }
    std::string names() const {
        std::string s;
        if (sets.empty()) return "<no report>";
        for (const auto& [n, p] : sets.back()) s += n + "=" + p.tunnelAddress() + " ";
        for (const auto& u : unreadable.back()) s += "(" + u.name + ": " + u.reason + ") ";
        return s;
    }
};

// Runs the loop until every task posted so far has run (posts are FIFO).
void drain(kovs::EventLoop& loop) {
    bool ran = false;
    loop.post([&] { ran = true; });
    loop.runUntil([&] { return ran; }, 5s);
}

}  // namespace

class KubernetesPeerSourceTest : public ::testing::Test {
protected:
    SelfSignedCert cert;
    KubeApiTestServer api{cert, "s3cret"};
    kovs::EventLoop loop;
    Reports reports;

    KubeCredentials creds() const {
        KubeCredentials c;
        c.server = api.url();
        c.caFile = cert.certFile();
        c.token = "s3cret";
        return c;
    }
    // The conditions also read state of other threads (the server), which
    // does not wake the loop: run it in short slices.
    bool waitFor(const std::function<bool()>& cond) {
        auto deadline = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < deadline) {
            if (loop.runUntil(cond, 10ms)) return true;
        }
        return cond();
    }
};

TEST_F(KubernetesPeerSourceTest, ListWatchBookmarkAbruptCloseGoneGarbage) {
    api.setNodes({node("self", "172.18.0.2", "90"), node("b", "172.18.0.3", "91", {"10.244.1.0/24"}),
                  node("c", "172.18.0.4", "92", {"10.244.2.0/24", "fd00:10:244:2::/64"})},
                 "100");
    KubernetesPeerSource source(loop, creds(), fastOptions());
    source.start([&](const PeerSet& s, const std::vector<RejectedPeer>& u) { reports.add(s, u); });

    // The list: every node but our own.
    ASSERT_TRUE(waitFor([&] { return !reports.sets.empty(); })) << "no peer set after the list";
    EXPECT_EQ(reports.last().size(), 2u) << reports.names();
    EXPECT_EQ(kovs::joinPrefixes(reports.last().at("b").podCIDRs), "10.244.1.0/24");
    ASSERT_TRUE(reports.self) << "this node's own Node is reported too";
    EXPECT_EQ(reports.self->tunnelAddress(), "172.18.0.2");
    EXPECT_EQ(reports.last().at("c").podCIDRs.size(), 2u);

    // The watch starts from the list's resourceVersion and asks for bookmarks.
    ASSERT_TRUE(waitFor([&] { return api.watches() == 1; }));
    auto params = api.watchParams(0);
    EXPECT_EQ(params["resourceVersion"], "100");
    EXPECT_EQ(params["allowWatchBookmarks"], "true");
    EXPECT_EQ(params["watch"], "true");

    api.sendEvent("ADDED", node("d", "fd00::4", "101"));
    ASSERT_TRUE(waitFor([&] { return reports.last().count("d"); })) << reports.names();
    EXPECT_EQ(reports.last().at("d").tunnelAddress(), "fd00::4");

    api.sendEvent("MODIFIED", node("b", "172.18.0.33", "102", {"10.244.1.0/24"}));
    ASSERT_TRUE(waitFor([&] { return reports.last().at("b").tunnelAddress() == "172.18.0.33"; })) << reports.names();

    // Two events in one chunk, one of them for our own node.
    api.sendWatch(json{{"type", "DELETED"}, {"object", node("c", "172.18.0.4", "103")}}.dump() + "\n" +
                  json{{"type", "MODIFIED"}, {"object", node("self", "172.18.0.99", "104")}}.dump() + "\n");
    ASSERT_TRUE(waitFor([&] { return !reports.last().count("c"); })) << reports.names();
    EXPECT_EQ(reports.self->tunnelAddress(), "172.18.0.99");

    // A bookmark moves the resourceVersion on; after an abrupt close the
    // source re-watches from there, without relisting.
    api.sendEvent("BOOKMARK", {{"kind", "Node"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "150"}}}});
    api.abortWatch();
    ASSERT_TRUE(waitFor([&] { return api.watches() == 2; })) << "no reconnect after an abrupt close";
    EXPECT_EQ(api.watchParams(1)["resourceVersion"], "150");
    EXPECT_EQ(api.lists(), 1);
    size_t reportsBefore = reports.sets.size();

    // 410 Gone: relist, then watch from the new list's resourceVersion.
    api.setNodes({node("self", "172.18.0.2", "190"), node("b", "172.18.0.33", "191"),
                  node("e", "172.18.0.5", "192")},
                 "200");
    api.sendEvent("ERROR", {{"kind", "Status"},
                            {"apiVersion", "v1"},
                            {"metadata", json::object()},
                            {"status", "Failure"},
                            {"message", "too old resource version: 150 (180)"},
                            {"reason", "Expired"},
                            {"code", 410}});
    ASSERT_TRUE(waitFor([&] { return api.lists() == 2 && api.watches() == 3; })) << "no relist after 410";
    EXPECT_EQ(api.watchParams(2)["resourceVersion"], "200");
    drain(loop);
    EXPECT_EQ(reports.sets.size(), reportsBefore + 1);
    EXPECT_EQ(reports.last().size(), 2u) << reports.names();
    EXPECT_TRUE(reports.last().count("e")) << reports.names();
    EXPECT_FALSE(reports.last().count("d")) << "a relist replaces the set: " << reports.names();
    reportsBefore = reports.sets.size();

    // Garbage: the connection is dropped and the source relists; the set
    // (unchanged on the server) is kept and not re-reported.
    api.sendWatch("this is not json\n");
    ASSERT_TRUE(waitFor([&] { return api.lists() == 3 && api.watches() == 4; })) << "no reconnect after garbage";
    drain(loop);
    EXPECT_EQ(reports.sets.size(), reportsBefore) << "garbage must not change the reported set";

    // A truncated line followed by an abrupt close: same.
    api.sendWatch(R"({"type":"ADDED","object":{"metadata":{"name":"f","resourceV)");
    api.abortWatch();
    ASSERT_TRUE(waitFor([&] { return api.lists() == 4 && api.watches() == 5; })) << "no reconnect after a partial line";
    drain(loop);
    EXPECT_EQ(reports.sets.size(), reportsBefore);
    EXPECT_EQ(reports.last().size(), 2u) << reports.names();

    // The stream still works after all that.
    api.sendEvent("DELETED", node("e", "172.18.0.5", "201"));
    ASSERT_TRUE(waitFor([&] { return !reports.last().count("e"); })) << reports.names();

    auto t0 = std::chrono::steady_clock::now();
    source.stop();
    auto stopMs = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    std::printf("stop() with a watch open took %lld ms\n", static_cast<long long>(stopMs.count()));
    size_t finalCount = reports.sets.size();
    api.sendEvent("ADDED", node("g", "172.18.0.7", "202"));
    drain(loop);
    EXPECT_EQ(reports.sets.size(), finalCount) << "report after stop()";
}

TEST_F(KubernetesPeerSourceTest, KubeconfigWithRotatingTokenFileRecoversFromUnauthorized) {
    api.setNodes(json::array({node("b", "172.18.0.3", "1")}), "5");
    std::string tokenFile = cert.dir() + "/token";
    std::ofstream(tokenFile) << "wrong\n";
    std::string caB64 = kovs::runChecked({"openssl", "base64", "-A", "-in", cert.certFile()});
    std::string kubeconfig = cert.dir() + "/kubeconfig";
    std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                              << "clusters:\n- name: test\n  cluster:\n    server: " << api.url()
                              << "\n    certificate-authority-data: " << caB64 << "\n"
                              << "contexts:\n- name: test\n  context: {cluster: test, user: agent}\n"
                              << "users:\n- name: agent\n  user:\n    tokenFile: token\n";
    KubernetesPeerSource source(loop, kubeconfigCredentials(kubeconfig), fastOptions());
    source.start([&](const PeerSet& s, const std::vector<RejectedPeer>& u) { reports.add(s, u); });

    // Refused twice (so it retried with backoff), nothing reported.
    ASSERT_TRUE(waitFor([&] { return api.unauthorized() >= 2; }));
    drain(loop);
    EXPECT_TRUE(reports.sets.empty());

    // The token rotates: the next attempt re-reads the file and succeeds.
    std::ofstream(tokenFile) << "s3cret\n";
    ASSERT_TRUE(waitFor([&] { return !reports.sets.empty(); })) << "no recovery after the token was fixed";
    EXPECT_EQ(reports.last().at("b").tunnelAddress(), "172.18.0.3");
    source.stop();
}

TEST_F(KubernetesPeerSourceTest, UntrustedServerCertificateIsRefused) {
    api.setNodes(json::array({node("b", "172.18.0.3", "1")}), "5");
    SelfSignedCert otherCa;
    auto c = creds();
    c.caFile = otherCa.certFile();
    KubernetesPeerSource source(loop, c, fastOptions());
    source.start([&](const PeerSet& s, const std::vector<RejectedPeer>& u) { reports.add(s, u); });
    ASSERT_TRUE(waitFor([&] { return source.failures() >= 2; }));
    drain(loop);
    source.stop();
    EXPECT_TRUE(reports.sets.empty());
    EXPECT_EQ(api.lists(), 0);
}

// A server (or a proxy in front of it) sending a NodeList or a watch event
// beyond the limits is refused like garbage, instead of growing the agent
// without bound; the source recovers once the server behaves.
TEST_F(KubernetesPeerSourceTest, OversizedListAndEventAreRefused) {
    json many = json::array({node("self", "172.18.0.2", "1")});
    for (int i = 0; i < 40; ++i) many.push_back(node("n" + std::to_string(i), "172.18.1." + std::to_string(i + 1), "1"));
    api.setNodes(many, "10");
    auto o = fastOptions();
    o.maxListBytes = 4096;
    o.maxEventBytes = 2048;
    KubernetesPeerSource source(loop, creds(), o);
    source.start([&](const PeerSet& s, const std::vector<RejectedPeer>& u) { reports.add(s, u); });
    ASSERT_TRUE(waitFor([&] { return api.lists() >= 3; })) << "the refused list is not retried";
    drain(loop);
    EXPECT_TRUE(reports.sets.empty()) << "a NodeList over the limit was used: " << reports.names();
    EXPECT_EQ(api.watches(), 0);

    api.setNodes({node("self", "172.18.0.2", "90"), node("b", "172.18.0.3", "91")}, "100");
    ASSERT_TRUE(waitFor([&] { return !reports.sets.empty() && api.watches() == 1; })) << "no recovery";
    EXPECT_EQ(reports.last().size(), 1u) << reports.names();
    int lists = api.lists();

    // 3 KiB of one event with no end in sight: dropped, relisted, re-watched.
    api.sendWatch(R"({"type":"ADDED","object":{"metadata":{"name":")" + std::string(3000, 'x'));
    ASSERT_TRUE(waitFor([&] { return api.lists() == lists + 1 && api.watches() == 2; }))
        << "an oversized event did not end the stream";
    api.sendEvent("ADDED", node("c", "172.18.0.4", "101"));
    ASSERT_TRUE(waitFor([&] { return reports.last().count("c"); })) << reports.names();
    source.stop();
}

// One Node that does not decode (a podCIDR with host bits set, an InternalIP
// that is no address) is skipped and named, never the list: the others are
// peers. On the tree before the informer, parseNodeList threw for the whole
// list and no peer was reported at all.
TEST_F(KubernetesPeerSourceTest, BadNodesAmongGoodOnesAreSkippedAndNamed) {
    api.setNodes({node("self", "172.18.0.2", "90", {"10.244.0.0/24"}), node("b", "172.18.0.3", "91", {"10.244.1.0/24"}),
                  node("bad-cidr", "172.18.0.4", "92", {"10.244.3.1/24"}), node("bad-ip", "172.18.0.300", "93"),
                  node("c", "172.18.0.5", "94", {"10.244.2.0/24"})},
                 "100");
    KubernetesPeerSource source(loop, creds(), fastOptions());
    source.start([&](const PeerSet& s, const std::vector<RejectedPeer>& u) { reports.add(s, u); });
    ASSERT_TRUE(waitFor([&] { return !reports.sets.empty(); })) << "no peer set after a list with bad Nodes in it";
    EXPECT_EQ(reports.last().size(), 2u) << reports.names();
    EXPECT_TRUE(reports.last().count("b") && reports.last().count("c")) << reports.names();
    ASSERT_EQ(reports.unreadable.back().size(), 2u) << reports.names();
    EXPECT_EQ(reports.unreadable.back()[0].name, "bad-cidr");
    EXPECT_EQ(reports.unreadable.back()[0].reason, "Node bad-cidr.spec.podCIDRs: '10.244.3.1/24' has host bits set");
    EXPECT_EQ(reports.unreadable.back()[1].name, "bad-ip");
    EXPECT_EQ(api.lists(), 1) << "a list with bad Nodes in it is a good list";

    // A watch event that turns a good Node bad: that Node leaves the set (as
    // a fresh list would give it), is named, and the watch goes on.
    ASSERT_TRUE(waitFor([&] { return api.watches() == 1; }));
    api.sendEvent("MODIFIED", node("c", "not-an-ip", "101", {"10.244.2.0/24"}));
    ASSERT_TRUE(waitFor([&] { return !reports.last().count("c"); })) << reports.names();
    EXPECT_EQ(reports.unreadable.back().size(), 3u) << reports.names();
    api.sendEvent("ADDED", node("d", "172.18.0.6", "102", {"10.244.4.0/24"}));
    ASSERT_TRUE(waitFor([&] { return reports.last().count("d"); })) << "the watch stopped after a bad event";
    api.sendEvent("MODIFIED", node("c", "172.18.0.5", "103", {"10.244.2.0/24"}));
    ASSERT_TRUE(waitFor([&] { return reports.last().count("c"); })) << reports.names();
    EXPECT_EQ(reports.unreadable.back().size(), 2u) << "c is good again: " << reports.names();
    api.sendEvent("DELETED", node("bad-ip", "172.18.0.300", "104"));
    ASSERT_TRUE(waitFor([&] { return reports.unreadable.back().size() == 1; })) << reports.names();
    EXPECT_EQ(api.lists(), 1) << "no relist for a bad object";
    EXPECT_EQ(api.watches(), 1) << "no new watch for a bad object";
    EXPECT_EQ(source.failures(), 0u);
    kovs::MetricsText m;
    source.metrics(m);
    EXPECT_NE(m.str().find(R"(kovs_kube_objects_rejected_total{resource="nodes"} 3)"), std::string::npos) << m.str();
    source.stop();
}

// A server that expires every watch at once (410) is listed again at most
// once per backoff step: each gap between two lists is at least the backoff
// of its step (20, 40, 80, 160, then 200 ms, the cap). On the tree before the
// informer, a successful list reset the backoff and Gone relisted at once: a
// tight loop of lists.
TEST_F(KubernetesPeerSourceTest, GoneOnEveryWatchRelistsOncePerBackoffStep) {
    api.setNodes(json::array({node("b", "172.18.0.3", "91")}), "100");
    api.expireEveryWatch(true);
    KubernetesPeerSource source(loop, creds(), fastOptions());
    source.start([&](const PeerSet& s, const std::vector<RejectedPeer>& u) { reports.add(s, u); });
    ASSERT_TRUE(waitFor([&] { return api.lists() >= 7; })) << "lists: " << api.lists();
    source.stop();
    auto times = api.listTimes();
    auto expected = 20ms;
    for (size_t i = 1; i < times.size(); ++i) {
        auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(times[i] - times[i - 1]);
        EXPECT_GE(gap, expected) << "list " << i << " came " << gap.count() << " ms after the one before";
        expected = std::min(expected * 2, std::chrono::milliseconds(200));
    }
    ASSERT_FALSE(reports.sets.empty());
    EXPECT_TRUE(reports.last().count("b")) << "the list itself was good and used: " << reports.names();
}
