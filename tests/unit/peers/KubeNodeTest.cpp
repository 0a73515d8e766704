#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/Error.hpp"
#include "peers/kube/KubeConfig.hpp"
#include "peers/kube/KubeNode.hpp"
#include "tests/support/TempDir.hpp"

using kovs::Error;
using namespace kovs::peers;
using nlohmann::json;

namespace {

json node(const std::string& name, json addresses, json spec = json::object()) {
    return {{"kind", "Node"},
            {"metadata", {{"name", name}, {"resourceVersion", "7"}}},
            {"spec", spec},
            {"status", {{"addresses", addresses}}}};
}

}  // namespace

TEST(KubeNode, PeerIsFirstInternalIPAndPodCIDRs) {
    auto p = peerFromNode(node("kind-worker",
                               json::array({{{"type", "Hostname"}, {"address", "kind-worker"}},
                                            {{"type", "InternalIP"}, {"address", "172.18.0.3"}},
                                            {{"type", "InternalIP"}, {"address", "fc00:f853:ccd:e793::3"}}}),
                               {{"podCIDR", "10.244.1.0/24"}, {"podCIDRs", {"10.244.1.0/24", "fd00:10:244:1::/64"}}}));
    ASSERT_TRUE(p);
    EXPECT_EQ(p->name, "kind-worker");
    EXPECT_EQ(p->nodeIP, "172.18.0.3");
    EXPECT_EQ(p->podCIDRs, (std::vector<std::string>{"10.244.1.0/24", "fd00:10:244:1::/64"}));
}

TEST(KubeNode, OldClustersOnlyHavePodCIDR) {
    auto p = peerFromNode(node("n", json::array({{{"type", "InternalIP"}, {"address", "fd00::0003"}}}),
                               {{"podCIDR", "10.244.3.0/24"}}));
    ASSERT_TRUE(p);
    EXPECT_EQ(p->nodeIP, "fd00::3");
    EXPECT_EQ(p->podCIDRs, std::vector<std::string>{"10.244.3.0/24"});
}

TEST(KubeNode, NodeWithoutInternalIPIsNoPeerYet) {
    EXPECT_FALSE(peerFromNode(node("n", json::array({{{"type", "ExternalIP"}, {"address", "1.2.3.4"}}}))));
    EXPECT_FALSE(peerFromNode({{"metadata", {{"name", "n"}}}}));
}

TEST(KubeNode, MalformedNodesAreErrors) {
    EXPECT_THROW(peerFromNode(json::array()), Error);
    EXPECT_THROW(peerFromNode({{"metadata", {{"name", 5}}}}), Error);
    EXPECT_THROW(peerFromNode({{"metadata", {{"name", ""}}}}), Error);
    EXPECT_THROW(peerFromNode(node("n", json::array({{{"type", "InternalIP"}, {"address", "not-an-ip"}}}))), Error);
    EXPECT_THROW(peerFromNode(node("n", json::array({{{"type", "InternalIP"}}}))), Error);
    EXPECT_THROW(peerFromNode(node("n", "oops")), Error);
    EXPECT_THROW(peerFromNode(node("n", json::array({{{"type", "InternalIP"}, {"address", "1.2.3.4"}}}),
                                   {{"podCIDRs", {"10.0.0.1/8"}}})),
                 Error);
    EXPECT_THROW(peerFromNode(node("n", json::array({{{"type", "InternalIP"}, {"address", "1.2.3.4"}}}),
                                   {{"podCIDRs", {7}}})),
                 Error);
}

TEST(KubeNode, ListSkipsOwnNodeAndNodesWithoutAddress) {
    json list = {{"kind", "NodeList"},
                 {"apiVersion", "v1"},
                 {"metadata", {{"resourceVersion", "1234"}}},
                 {"items",
                  {node("self", json::array({{{"type", "InternalIP"}, {"address", "172.18.0.2"}}})),
                   node("peer", json::array({{{"type", "InternalIP"}, {"address", "172.18.0.3"}}})),
                   node("joining", json::array())}}};
    auto l = parseNodeList(list.dump(), "self");
    EXPECT_EQ(l.resourceVersion, "1234");
    ASSERT_EQ(l.peers.size(), 1u);
    EXPECT_EQ(l.peers.at("peer").nodeIP, "172.18.0.3");
}

// parseNodeList drops the members it does not read while parsing; the ones
// it reads come through wherever same-named members sit around them.
TEST(KubeNode, ListOfKindShapedNodes) {
    json kindNode = {
        {"kind", "Node"},
        {"apiVersion", "v1"},
        {"metadata",
         {{"name", "kind-worker"},
          {"resourceVersion", "88"},
          {"labels", {{"kubernetes.io/hostname", "kind-worker"}, {"name", "not-this"}}},
          {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}}},
          {"managedFields", json::array({{{"manager", "kubelet"}, {"fieldsV1", {{"f:status", json::object()}}}}})}}},
        {"spec",
         {{"podCIDR", "10.244.1.0/24"},
          {"podCIDRs", {"10.244.1.0/24"}},
          {"providerID", "kind://docker/kind/kind-worker"},
          {"taints", json::array({{{"key", "k"}, {"effect", "NoSchedule"}, {"type", "x"}}})}}},
        {"status",
         {{"addresses", json::array({{{"type", "Hostname"}, {"address", "kind-worker"}},
                                     {{"type", "InternalIP"}, {"address", "172.18.0.3"}}})},
          {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}, {"address", "1.2.3.4"}}})},
          {"images", json::array({{{"names", {"registry.k8s.io/pause:3.9"}}, {"sizeBytes", 1}}})},
          {"nodeInfo", {{"kubeletVersion", "v1.29.2"}, {"name", "x"}}}}}};
    json list = {{"kind", "NodeList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "90"}}},
                 {"items", {kindNode}}};
    auto l = parseNodeList(list.dump(), "");
    EXPECT_EQ(l.resourceVersion, "90");
    ASSERT_EQ(l.peers.size(), 1u);
    EXPECT_EQ(l.peers.at("kind-worker").nodeIP, "172.18.0.3");
    EXPECT_EQ(l.peers.at("kind-worker").podCIDRs, std::vector<std::string>{"10.244.1.0/24"});
}

TEST(KubeNode, BadListsAreErrors) {
    EXPECT_THROW(parseNodeList("", ""), Error);
    EXPECT_THROW(parseNodeList("{\"kind\":\"NodeList\"", ""), Error);
    EXPECT_THROW(parseNodeList(R"({"kind":"Status","code":403})", ""), Error);
    EXPECT_THROW(parseNodeList(R"({"kind":5})", ""), Error);
    EXPECT_THROW(parseNodeList(R"({"kind":"NodeList","metadata":{}})", ""), Error);
    EXPECT_THROW(parseNodeList(R"({"kind":"NodeList","metadata":{"resourceVersion":"1"},"items":{}})", ""), Error);
}

TEST(KubeNode, WatchEvents) {
    auto added = parseWatchEvent(
        json{{"type", "ADDED"}, {"object", node("b", json::array({{{"type", "InternalIP"}, {"address", "10.0.0.2"}}}))}}
            .dump());
    EXPECT_EQ(added.type, WatchEvent::Type::Added);
    EXPECT_EQ(added.nodeName, "b");
    EXPECT_EQ(added.resourceVersion, "7");
    ASSERT_TRUE(added.peer);
    EXPECT_EQ(added.peer->nodeIP, "10.0.0.2");

    auto bookmark = parseWatchEvent(
        R"({"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"99","annotations":{"k8s.io/initial-events-end":"true"}}}})");
    EXPECT_EQ(bookmark.type, WatchEvent::Type::Bookmark);
    EXPECT_EQ(bookmark.resourceVersion, "99");

    auto gone = parseWatchEvent(
        R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}})j");
    EXPECT_EQ(gone.type, WatchEvent::Type::Error);
    EXPECT_EQ(gone.errorCode, 410);
    EXPECT_EQ(gone.errorMessage, "too old resource version: 1 (5)");

    auto deleted = parseWatchEvent(json{{"type", "DELETED"}, {"object", node("b", json::array())}}.dump());
    EXPECT_EQ(deleted.type, WatchEvent::Type::Deleted);
    EXPECT_EQ(deleted.nodeName, "b");
}

TEST(KubeNode, BadWatchLinesAreErrors) {
    for (const char* line : {"", "garbage", "{\"type\":\"ADDED\",\"obj", "[]", "{\"type\":\"ADDED\"}",
                             "{\"type\":\"ADDED\",\"object\":[]}", "{\"type\":\"EXPLODED\",\"object\":{}}",
                             "{\"type\":1,\"object\":{}}", "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}",
                             "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"3\"}}}"}) {
        EXPECT_THROW(parseWatchEvent(line), Error) << line;
    }
}

TEST(KubeConfig, Base64) {
    EXPECT_EQ(base64Decode("aGVsbG8="), "hello");
    EXPECT_EQ(base64Decode("aGVs\nbG8h"), "hello!");
    EXPECT_EQ(base64Decode(""), "");
    EXPECT_THROW(base64Decode("a*b="), Error);
    EXPECT_THROW(base64Decode("aGVsbG8=x"), Error);
}

TEST(KubeConfig, KindStyleKubeconfigWithClientCert) {
    auto c = parseKubeconfig(R"(
apiVersion: v1
kind: Config
current-context: kind-kind
clusters:
- name: kind-kind
  cluster:
    server: https://127.0.0.1:41234/
    certificate-authority-data: Q0FQRU0=
contexts:
- name: kind-kind
  context: {cluster: kind-kind, user: kind-kind}
- name: other
  context: {cluster: other, user: tok}
users:
- name: kind-kind
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: tok
  user:
    token: abc
    client-certificate: certs/c.pem
)", "/etc/kube", "", "kc");
    EXPECT_EQ(c.server, "https://127.0.0.1:41234");
    EXPECT_EQ(c.caData, "CAPEM");
    EXPECT_EQ(c.clientCertData, "CERT");
    EXPECT_EQ(c.clientKeyData, "KEY");
    EXPECT_EQ(c.bearerToken(), "");
    EXPECT_THROW(parseKubeconfig("current-context: other\ncontexts:\n- name: other\n  context: {cluster: other}\n", "/", "",
                                 "kc"),
                 Error);  // no such cluster
}

TEST(KubeConfig, BadKubeconfigs) {
    EXPECT_THROW(parseKubeconfig("[", "/", "", "kc"), Error);
    EXPECT_THROW(parseKubeconfig("- a", "/", "", "kc"), Error);
    EXPECT_THROW(parseKubeconfig("clusters: []", "/", "", "kc"), Error);  // no current-context
    const char* ftp = "current-context: c\ncontexts: [{name: c, context: {cluster: x}}]\n"
                      "clusters: [{name: x, cluster: {server: 'ftp://x'}}]\n";
    EXPECT_THROW(parseKubeconfig(ftp, "/", "", "kc"), Error);
    const char* exec = "current-context: c\ncontexts: [{name: c, context: {cluster: x, user: u}}]\n"
                       "clusters: [{name: x, cluster: {server: 'https://x'}}]\n"
                       "users: [{name: u, user: {exec: {command: aws}}}]\n";
    EXPECT_THROW(parseKubeconfig(exec, "/", "", "kc"), Error);
}

TEST(KubeConfig, InClusterNeedsEnvAndFiles) {
    EXPECT_THROW(inClusterCredentials({}, "/nonexistent"), Error);
    EXPECT_THROW(inClusterCredentials({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "x"}},
                                      "/nonexistent"),
                 Error);
    EXPECT_THROW(inClusterCredentials({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
                                      "/nonexistent"),
                 Error);
}

TEST(KubeConfig, InClusterReadsServiceAccount) {
    kovs::test::TempDir tmp{"kovs-sa"};
    const std::string& dir = tmp.path();
    {
        std::ofstream(dir + "/token") << "tok-1\n";
        std::ofstream(dir + "/ca.crt") << "PEM";
    }
    auto c = inClusterCredentials({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir);
    EXPECT_EQ(c.server, "https://[fd00::1]:443");
    EXPECT_EQ(c.caFile, dir + "/ca.crt");
    EXPECT_EQ(c.bearerToken(), "tok-1");
    // Projected tokens rotate: the next connection must see the new one.
    std::ofstream(dir + "/token") << "tok-2";
    EXPECT_EQ(c.bearerToken(), "tok-2");
    std::filesystem::remove_all(dir);
}
