// KubeHttpClient's TLS (mbed TLS) against an OpenSSL server (cpp-httplib):
// RSA and ECDSA server certificates issued by a CA as kubeadm issues them,
// the server's name checked for IP literals and DNS names (and sent as SNI),
// client certificates with the key formats kubeconfigs carry, and every
// refusal named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "kube/KubeHttpClient.hpp"
#include "tests/integration/kube/KubeApiTestServer.hpp"

using namespace kovs::kube;
using kovs::test::CertSpec;
using kovs::test::KubeApiTestServer;
using kovs::test::TestCert;
using nlohmann::json;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

namespace {

const json kNodes = json::array({{{"metadata", {{"name", "b"}, {"resourceVersion", "1"}}}}});

struct Got {
    KubeHttpClient::Result r;
    std::string body;
};

Got getNodes(const KubeCredentials& c) {
    KubeHttpClient client(c);
    Got g;
    g.r = client.get("/api/v1/nodes", [&](long, std::string_view d) {
        g.body += d;
        return true;
    }, 10s);
    return g;
}

KubeCredentials trusting(const std::string& server, const TestCert& ca) {
    KubeCredentials c;
    c.server = server;
    c.caData = ca.certPem();
    c.token = "s3cret";
    return c;
}

std::string base64(const std::string& file) { return kovs::runChecked({"openssl", "base64", "-A", "-in", file}); }

const char* keyName(CertSpec::Key k) { return k == CertSpec::Key::Rsa2048 ? "RSA 2048" : "ECDSA P-256"; }

}  // namespace

TEST(KubeTls, RsaAndEcdsaServerCertificatesIssuedByACa) {
    for (auto key : {CertSpec::Key::Rsa2048, CertSpec::Key::EcP256}) {
        SCOPED_TRACE(keyName(key));
        TestCert ca({.key = key, .commonName = "kubernetes", .subjectAltName = ""});
        TestCert serving({.key = key,
                          .commonName = "kube-apiserver",
                          .subjectAltName = "DNS:kubernetes,DNS:localhost,IP:10.96.0.1,IP:127.0.0.1"},
                         &ca);
        KubeApiTestServer api(serving, "s3cret");
        api.setNodes(kNodes, "7");

        Got g = getNodes(trusting(api.url(), ca));
        EXPECT_TRUE(g.r.complete) << g.r.error;
        EXPECT_EQ(g.r.status, 200);
        EXPECT_THAT(g.body, HasSubstr(R"("kind":"NodeList")"));
        EXPECT_EQ(api.lists(), 1);
        EXPECT_THAT(api.lastTls().version, AnyOf("TLSv1.2", "TLSv1.3"));
        EXPECT_EQ(api.lastTls().serverName, "") << "SNI sent for an IP literal";
    }
}

// mbed TLS 2.28 checks only DNS names; IP literals are checked by
// TlsSession. Without that check every IP-literal case below would connect.
TEST(KubeTls, TheServerNameIsCheckedForDnsNamesAndIpAddresses) {
    TestCert ca({.commonName = "kubernetes", .subjectAltName = ""});
    TestCert localhostOnly({.commonName = "kube-apiserver", .subjectAltName = "DNS:localhost"}, &ca);
    {
        KubeApiTestServer api(localhostOnly, "s3cret");
        api.setNodes(kNodes, "7");
        Got byName = getNodes(trusting("https://localhost:" + std::to_string(api.port()), ca));
        EXPECT_TRUE(byName.r.complete) << byName.r.error;
        EXPECT_EQ(api.lastTls().serverName, "localhost");

        Got byIp = getNodes(trusting(api.url(), ca));
        EXPECT_FALSE(byIp.r.complete);
        EXPECT_THAT(byIp.r.error, HasSubstr("TLS: server certificate: not issued for 127.0.0.1"));
        EXPECT_EQ(api.lists(), 1);
    }
    // The CN is 127.0.0.1, the iPAddress name another address: not ours.
    TestCert otherIp({.commonName = "127.0.0.1", .subjectAltName = "IP:127.0.0.2,IP:::1,DNS:kubernetes"}, &ca);
    KubeApiTestServer api(otherIp, "s3cret");
    api.setNodes(kNodes, "7");
    Got byIp = getNodes(trusting(api.url(), ca));
    EXPECT_FALSE(byIp.r.complete);
    EXPECT_THAT(byIp.r.error, HasSubstr("TLS: server certificate: not issued for 127.0.0.1"));
    Got byName = getNodes(trusting("https://localhost:" + std::to_string(api.port()), ca));
    EXPECT_FALSE(byName.r.complete);
    EXPECT_THAT(byName.r.error, HasSubstr("TLS: server certificate: not issued for localhost"));
    EXPECT_EQ(api.lists(), 0);
}

TEST(KubeTls, UntrustedOrUnusableCaIsNamed) {
    TestCert serving;
    TestCert other;
    KubeApiTestServer api(serving, "s3cret");
    api.setNodes(kNodes, "7");
    Got g = getNodes(trusting(api.url(), other));
    EXPECT_FALSE(g.r.complete);
    EXPECT_EQ(g.r.status, 0);
    EXPECT_THAT(g.r.error, HasSubstr("TLS: server certificate: "));

    auto c = trusting(api.url(), other);
    c.caData = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n";
    EXPECT_THAT(getNodes(c).r.error, HasSubstr("certificate-authority-data: no usable certificate"));
    c.caData.clear();
    c.caFile = serving.dir() + "/missing.pem";
    EXPECT_THAT(getNodes(c).r.error, HasSubstr("CA file " + c.caFile + ": cannot read"));
    EXPECT_EQ(api.lists(), 0);

    // insecure-skip-tls-verify: any certificate, any name; the token goes
    // there only with the flag that says so on purpose.
    c = trusting("https://localhost:" + std::to_string(api.port()), other);
    c.insecureSkipTlsVerify = true;
    try {
        getNodes(c);
        ADD_FAILURE() << "the token was sent to a server nobody verified";
    } catch (const kovs::Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("refusing to send the bearer token with insecure-skip-tls-verify"));
    }
    EXPECT_EQ(api.lists(), 0);
    c.allowUnprotectedToken = true;
    Got insecure = getNodes(c);
    EXPECT_TRUE(insecure.r.complete) << insecure.r.error;
    EXPECT_EQ(api.lists(), 1);
}

// kind's kubeconfigs authenticate with a client certificate: RSA, its key
// written by kubeadm as "BEGIN RSA PRIVATE KEY". ECDSA and PKCS#8 keys too.
TEST(KubeTls, ClientCertificatesFromAKubeconfig) {
    TestCert serving;
    TestCert clientCa({.key = CertSpec::Key::Rsa2048, .commonName = "kubernetes", .subjectAltName = ""});
    KubeApiTestServer api(serving, "s3cret", &clientCa);
    api.setNodes(kNodes, "7");
    struct Case {
        CertSpec::Key key;
        bool traditional;
        bool inFiles;
    };
    for (Case k : {Case{CertSpec::Key::Rsa2048, true, false}, Case{CertSpec::Key::EcP256, true, false},
                   Case{CertSpec::Key::EcP256, false, false}, Case{CertSpec::Key::Rsa2048, false, true}}) {
        SCOPED_TRACE(std::string(keyName(k.key)) + (k.traditional ? ", PKCS#1/SEC1 key" : ", PKCS#8 key") +
                     (k.inFiles ? ", in files" : ", inline"));
        TestCert user({.key = k.key, .commonName = "kovs-agent", .subjectAltName = "", .traditionalKey = k.traditional},
                      &clientCa);
        const char* pemType = !k.traditional                    ? "BEGIN PRIVATE KEY"
                              : k.key == CertSpec::Key::Rsa2048 ? "BEGIN RSA PRIVATE KEY"
                                                                : "BEGIN EC PRIVATE KEY";
        ASSERT_THAT(user.keyPem(), HasSubstr(pemType));
        std::string userLines = k.inFiles ? "    client-certificate: cert.pem\n    client-key: key.pem\n"
                                          : "    client-certificate-data: " + base64(user.certFile()) +
                                                "\n    client-key-data: " + base64(user.keyFile()) + "\n";
        std::string kubeconfig = "apiVersion: v1\nkind: Config\ncurrent-context: kind\nclusters:\n- name: kind\n"
                                 "  cluster:\n    server: " + api.url() + "\n    certificate-authority-data: " +
                                 base64(serving.certFile()) + "\ncontexts:\n- name: kind\n"
                                 "  context: {cluster: kind, user: admin}\nusers:\n- name: admin\n  user:\n" +
                                 userLines;
        int lists = api.lists();
        Got g = getNodes(parseKubeconfig(kubeconfig, user.dir(), "", "test"));
        EXPECT_TRUE(g.r.complete) << g.r.error;
        EXPECT_EQ(g.r.status, 200);
        EXPECT_EQ(api.lists(), lists + 1);
        EXPECT_THAT(api.lastTls().clientSubject, HasSubstr("CN=kovs-agent"));
    }
    EXPECT_EQ(api.unauthorized(), 0);
}

TEST(KubeTls, ClientCertificateProblemsAreNamed) {
    TestCert serving;
    TestCert clientCa({.commonName = "kubernetes", .subjectAltName = ""});
    KubeApiTestServer api(serving, "s3cret", &clientCa);
    TestCert user({.commonName = "kovs-agent", .subjectAltName = ""}, &clientCa);
    TestCert otherUser({.commonName = "someone", .subjectAltName = ""}, &clientCa);
    auto c = trusting(api.url(), serving);

    // The server insists on a certificate; the handshake says it failed.
    Got none = getNodes(c);
    EXPECT_FALSE(none.r.complete);
    EXPECT_THAT(none.r.error, HasSubstr("TLS handshake: "));

    c.clientCertData = user.certPem();
    EXPECT_THAT(getNodes(c).r.error, HasSubstr("client certificate: no client key given"));
    c.clientKeyData = otherUser.keyPem();
    EXPECT_THAT(getNodes(c).r.error, HasSubstr("client certificate and key do not match"));
    c.clientKeyData = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n";
    EXPECT_THAT(getNodes(c).r.error, HasSubstr("client-key-data: "));
    c.clientKeyData.clear();
    c.clientKeyFile = user.dir() + "/missing.key";
    EXPECT_THAT(getNodes(c).r.error, HasSubstr("client key " + c.clientKeyFile + ": cannot read"));
    EXPECT_EQ(api.lists(), 0);
}

TEST(KubeTls, InterruptWakesAWatchBlockedInTls) {
    TestCert serving;
    KubeApiTestServer api(serving, "s3cret");
    api.setNodes(kNodes, "7");
    KubeHttpClient client(trusting(api.url(), serving));
    auto blocked = std::async(std::launch::async, [&] {
        return client.get("/api/v1/nodes?watch=true", [](long, std::string_view) { return true; }, 60s);
    });
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (api.watches() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
    ASSERT_EQ(api.watches(), 1) << "the watch never reached the server";
    client.interrupt();
    ASSERT_EQ(blocked.wait_for(10s), std::future_status::ready) << "interrupt() did not wake get()";
    auto r = blocked.get();
    EXPECT_TRUE(r.interrupted) << r.error;
    EXPECT_FALSE(r.complete);
}
