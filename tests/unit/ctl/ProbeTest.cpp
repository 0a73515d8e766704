// kovsctl probe's pure parts: the target syntax (every bad spec refused with
// what is wrong), the ICMP echo it sends and the reply it accepts, and how
// it finds the probe server's name in an HTTP answer.
#include <gtest/gtest.h>

#include "base/Error.hpp"
#include "ctl/Probe.hpp"

using kovs::ctl::ProbeTarget;
using kovs::ctl::parseProbeTarget;

TEST(ProbeTarget, ParsesTcpAndPingTargetsOfBothFamilies) {
    auto t = parseProbeTarget("pod/kovs-worker=tcp:10.244.1.5:8080");
    EXPECT_EQ(t.name, "pod/kovs-worker");
    EXPECT_EQ(t.kind, ProbeTarget::Kind::Tcp);
    EXPECT_EQ(t.host, "10.244.1.5");
    EXPECT_EQ(t.port, 8080);
    auto dns = parseProbeTarget("dns=tcp:kovs-smoke.kovs-smoke.svc.cluster.local:80");
    EXPECT_EQ(dns.host, "kovs-smoke.kovs-smoke.svc.cluster.local");
    EXPECT_EQ(dns.port, 80);
    auto v6 = parseProbeTarget("pod6=tcp:[fd00:10:244:1::5]:8080");
    EXPECT_EQ(v6.host, "fd00:10:244:1::5");
    EXPECT_EQ(v6.port, 8080);
    auto ping = parseProbeTarget("egress=ping:172.18.0.1");
    EXPECT_EQ(ping.kind, ProbeTarget::Kind::Ping);
    EXPECT_EQ(ping.host, "172.18.0.1");
    EXPECT_EQ(parseProbeTarget("egress6=ping:fc00:f853:ccd:e793::1").host, "fc00:f853:ccd:e793::1");
}

TEST(ProbeTarget, RefusesBadSpecsSayingWhatIsWrong) {
    struct Case {
        const char* spec;
        const char* why;
    };
    for (auto c : std::initializer_list<Case>{
             {"tcp:10.0.0.1:80", "no NAME="},
             {"Pod=tcp:10.0.0.1:80", "the name must be lower-case"},
             {"=tcp:10.0.0.1:80", "the name must be"},
             {"a=udp:10.0.0.1:80", "unknown kind 'udp'"},
             {"a=tcp:10.0.0.1", "no ':PORT'"},
             {"a=tcp:10.0.0.1:", "port '': expected 1-65535"},
             {"a=tcp:host", "no ':PORT'"},
             {"a=tcp:10.0.0.1:0", "expected 1-65535"},
             {"a=tcp:10.0.0.1:65536", "expected 1-65535"},
             {"a=tcp:10.0.0.1:08", "expected 1-65535"},
             {"a=tcp:fd00::1:80", "an IPv6 address goes in brackets"},
             {"a=tcp:[10.0.0.1]:80", "is not an IPv6 address"},
             {"a=tcp:[fd00::1]80", "then ':PORT'"},
             {"a=tcp:bad_host!:80", "neither an address nor a DNS name"},
             {"a=tcp:-x.example:80", "neither an address nor a DNS name"},
             {"a=ping:kovs-smoke.svc", "ping needs an IPv4 or IPv6 address"},
             {"a=ping:", "ping needs"},
         }) {
        try {
            parseProbeTarget(c.spec);
            ADD_FAILURE() << c.spec << " was accepted";
        } catch (const kovs::Error& e) {
            std::string what = e.what();
            EXPECT_NE(what.find(c.why), std::string::npos) << c.spec << ": " << what;
            EXPECT_NE(what.find("expected NAME=tcp:HOST:PORT or NAME=ping:ADDRESS"), std::string::npos) << what;
        }
    }
}

TEST(ProbeIcmp, EchoRequestHasAValidChecksumAndItsReplyIsRecognised) {
    auto req = kovs::ctl::icmpEchoRequest(false, 0x1234, 1, "kovs-probe");
    ASSERT_EQ(req.size(), 18u);
    EXPECT_EQ(req[0], 8);
    // The one's complement sum over a packet with a correct checksum is 0xffff.
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < req.size(); i += 2) sum += static_cast<uint32_t>(req[i] << 8 | req[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    EXPECT_EQ(sum, 0xffffu);

    // The reply as a raw IPv4 socket hands it over: a 20-byte IP header first.
    std::vector<uint8_t> reply(20, 0);
    reply[0] = 0x45;
    reply.insert(reply.end(), req.begin(), req.end());
    reply[20] = 0;  // echo reply
    EXPECT_TRUE(kovs::ctl::isEchoReply(false, true, reply.data(), reply.size(), 0x1234, 1, true));
    EXPECT_FALSE(kovs::ctl::isEchoReply(false, true, reply.data(), reply.size(), 0x1235, 1, true)) << "another id";
    EXPECT_TRUE(kovs::ctl::isEchoReply(false, true, reply.data(), reply.size(), 0x1235, 1, false))
        << "a ping socket rewrites the id";
    EXPECT_FALSE(kovs::ctl::isEchoReply(false, true, reply.data(), reply.size(), 0x1234, 2, true)) << "another sequence";
    EXPECT_FALSE(kovs::ctl::isEchoReply(false, true, reply.data(), 24, 0x1234, 1, true)) << "truncated";
    reply[20] = 8;  // our own request, seen by a raw socket on loopback
    EXPECT_FALSE(kovs::ctl::isEchoReply(false, true, reply.data(), reply.size(), 0x1234, 1, true));

    auto req6 = kovs::ctl::icmpEchoRequest(true, 7, 1, "x");
    EXPECT_EQ(req6[0], 128);
    req6[0] = 129;
    EXPECT_TRUE(kovs::ctl::isEchoReply(true, false, req6.data(), req6.size(), 7, 1, true));
}

TEST(ProbeServerName, FoundOnlyInAProbeServersAnswer) {
    EXPECT_EQ(kovs::ctl::probeServerName("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nkovs-probe kovs-smoke-x7k2q\n"),
              "kovs-smoke-x7k2q");
    EXPECT_EQ(kovs::ctl::probeServerName("HTTP/1.1 404 Not Found\r\n\r\n<html>kovs-probe x</html>\n"), "");
    EXPECT_EQ(kovs::ctl::probeServerName("HTTP/1.0 200 OK\r\nX-Kovs: kovs-probe fake\r\n\r\nhello\n"), "") << "a header is not the body";
    EXPECT_EQ(kovs::ctl::probeServerName(""), "");
}

TEST(ProbeLine, HasTheShapeOfDoctorsLines) {
    auto t = parseProbeTarget("clusterip=tcp:10.96.0.50:80");
    EXPECT_EQ(kovs::ctl::formatProbeLine(t, {true, "answered by a"}), "  ok    clusterip      answered by a");
    EXPECT_EQ(kovs::ctl::formatProbeLine(t, {false, "refused"}), "  FAIL  clusterip      refused");
}
