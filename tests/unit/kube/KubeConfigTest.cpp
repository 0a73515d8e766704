// Credentials: kubeconfig files as kind and kubectl write them, the in-cluster service account.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/Error.hpp"
#include "kube/KubeConfig.hpp"
#include "tests/support/TempDir.hpp"

using kovs::Error;
using namespace kovs::kube;

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
