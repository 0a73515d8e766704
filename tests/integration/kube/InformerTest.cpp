// kube::Informer on a resource that is not Nodes: a namespaced path with
// label and field selectors, keys "namespace/name", a typed decoder whose
// failures are per object, and only the fields asked for kept.
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "base/EventLoop.hpp"
#include "kube/Informer.hpp"
#include "tests/integration/kube/KubeApiTestServer.hpp"

using namespace kovs::kube;
using kovs::test::KubeApiTestServer;
using kovs::test::SelfSignedCert;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct PodIP {
    std::string ip;
    bool sawManagedFields = false;
    bool operator==(const PodIP&) const = default;
};

json pod(const std::string& ns, const std::string& name, const std::string& rv, json ip) {
    return {{"kind", "Pod"},
            {"apiVersion", "v1"},
            {"metadata",
             {{"name", name},
              {"namespace", ns},
              {"resourceVersion", rv},
              {"labels", {{"app", "web"}}},
              {"managedFields", json::array({{{"manager", "kubelet"}}})}}},
            {"spec", {{"nodeName", "kind-worker"}}},
            {"status", {{"podIP", ip}, {"phase", "Running"}}}};
}

std::optional<PodIP> decodePod(const json& p) {
    const auto& ip = p.at("status").at("podIP");
    if (!ip.is_string()) throw kovs::Error("status.podIP: expected a string");
    return PodIP{ip.get<std::string>(), p.at("metadata").contains("managedFields")};
}

KubeCredentials credentialsOf(const KubeApiTestServer& api, const SelfSignedCert& cert) {
    KubeCredentials creds;
    creds.server = api.url();
    creds.caFile = cert.certFile();
    creds.token = "s3cret";
    return creds;
}

// Runs the loop until `cond` holds, for up to 10 s.
bool runUntil(kovs::EventLoop& loop, const std::function<bool()>& cond) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
        if (loop.runUntil(cond, 10ms)) return true;
    }
    return cond();
}

}  // namespace

TEST(Informer, NamespacedResourceWithSelectorsAndPerObjectDecoding) {
    SelfSignedCert cert;
    KubeApiTestServer api{cert, "s3cret", nullptr, "/api/v1/namespaces/x/pods"};
    api.setList({pod("x", "a", "5", "10.244.1.5"), pod("x", "b", "6", 42), pod("x", "c", "7", "10.244.1.7")}, "10",
                "PodList");
    kovs::EventLoop loop;
    auto creds = credentialsOf(api, cert);
    ListWatchOptions o;
    o.resource = "pods";
    o.path = "/api/v1/namespaces/x/pods";
    o.labelSelector = "app=web,tier!=db";
    o.fieldSelector = "spec.nodeName=kind-worker";
    o.fields = {"status", "podIP"};
    o.backoffInitial = 20ms;
    Informer<PodIP> pods(loop, creds, o, decodePod);
    std::vector<Snapshot<PodIP>> seen;
    pods.start([&](const Snapshot<PodIP>& s) { seen.push_back(s); });
    auto waitFor = [&](const std::function<bool()>& cond) { return runUntil(loop, cond); };
    ASSERT_TRUE(waitFor([&] { return !seen.empty(); }));
    EXPECT_EQ(api.listParams(0)["labelSelector"], "app=web,tier!=db");
    EXPECT_EQ(api.listParams(0)["fieldSelector"], "spec.nodeName=kind-worker");
    const auto& s = seen.back();
    ASSERT_EQ(s.items.size(), 2u);
    EXPECT_EQ(s.items.at("x/a").ip, "10.244.1.5");
    EXPECT_FALSE(s.items.at("x/a").sawManagedFields) << "fields not asked for are dropped while parsing";
    ASSERT_EQ(s.rejected.size(), 1u);
    EXPECT_EQ(s.rejected.at("x/b"), "status.podIP: expected a string");

    ASSERT_TRUE(waitFor([&] { return api.watches() == 1; }));
    auto w = api.watchParams(0);
    EXPECT_EQ(w["resourceVersion"], "10");
    EXPECT_EQ(w["labelSelector"], "app=web,tier!=db") << "the watch keeps the selectors";
    EXPECT_EQ(w["fieldSelector"], "spec.nodeName=kind-worker");
    api.sendEvent("MODIFIED", pod("x", "b", "11", "10.244.1.6"));
    ASSERT_TRUE(waitFor([&] { return seen.back().items.count("x/b") == 1; }));
    EXPECT_TRUE(seen.back().rejected.empty());
    size_t reports = seen.size();
    // The same object again changes nothing and is not reported.
    api.sendEvent("MODIFIED", pod("x", "b", "12", "10.244.1.6"));
    api.sendEvent("DELETED", pod("x", "a", "13", "10.244.1.5"));
    ASSERT_TRUE(waitFor([&] { return seen.back().items.count("x/a") == 0; }));
    EXPECT_EQ(seen.size(), reports + 1);
    pods.stop();
}

// A resource a CRD adds (AdminNetworkPolicy): not installed, its list is a
// 404, which is no failure: the informer is listed with nothing, and looks
// again every backoffMax. Installed later, its objects come; removed, they go.
TEST(Informer, AnOptionalResourceNotServedIsListedEmptyUntilItIs) {
    SelfSignedCert cert;
    const std::string path = "/apis/policy.networking.k8s.io/v1alpha1/adminnetworkpolicies";
    KubeApiTestServer api{cert, "s3cret", nullptr, path};
    api.setServed(false);
    kovs::EventLoop loop;
    auto creds = credentialsOf(api, cert);
    ListWatchOptions o;
    o.resource = "adminnetworkpolicies";
    o.path = path;
    o.optional = true;
    o.fields = {"status", "podIP"};
    o.backoffInitial = 20ms;
    o.backoffMax = 200ms;
    Informer<PodIP> anps(loop, creds, o, decodePod);
    std::vector<Snapshot<PodIP>> seen;
    anps.start([&](const Snapshot<PodIP>& s) { seen.push_back(s); });
    auto waitFor = [&](const std::function<bool()>& cond) { return runUntil(loop, cond); };
    ASSERT_TRUE(waitFor([&] { return anps.listed(); })) << "a 404 list of an optional resource counts as listed";
    EXPECT_TRUE(seen.back().items.empty());
    EXPECT_TRUE(anps.listWatch().absent());
    EXPECT_EQ(anps.listWatch().failures(), 0u) << "not installed is no failure";
    ASSERT_TRUE(waitFor([&] { return api.lists() >= 3; })) << "looked for again";
    auto times = api.listTimes();
    EXPECT_GE(times[2] - times[1], 150ms) << "every backoffMax, not in a tight loop";

    api.setList(json::array({pod("", "anp-a", "5", "10.244.1.5")}), "10", "AdminNetworkPolicyList");
    api.setServed(true);
    ASSERT_TRUE(waitFor([&] { return !seen.empty() && seen.back().items.count("anp-a") == 1; })) << "the CRD installed: its objects come";
    EXPECT_FALSE(anps.listWatch().absent());
    ASSERT_TRUE(waitFor([&] { return api.watches() >= 1; }));

    api.setServed(false);
    ASSERT_TRUE(waitFor([&] { return seen.back().items.empty(); })) << "the CRD removed: its objects go";
    EXPECT_TRUE(anps.listed());
    anps.stop();
}
