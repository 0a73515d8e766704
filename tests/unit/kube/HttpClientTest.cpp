// HttpResponseParser on byte streams cut at every position, and KubeHttpClient
// against a scripted plain-HTTP server on loopback (the TLS side is covered by
// integration_kube: KubeTlsTest and the Kubernetes API test server).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <future>
#include <thread>

#include "base/Error.hpp"
#include "base/UniqueFd.hpp"
#include "kube/HttpResponseParser.hpp"
#include "kube/KubeHttpClient.hpp"

using namespace kovs;
using namespace kovs::kube;
using ::testing::HasSubstr;

namespace {

struct Parsed {
    int status = 0;
    std::string body;
    bool done = false;
};

// Feeds `raw` split after byte `cut` (and in one piece when cut is npos).
Parsed parse(std::string_view raw, size_t cut = std::string_view::npos, bool closeAtEnd = false) {
    HttpResponseParser p;
    Parsed out;
    auto onBody = [&](std::string_view d) {
        out.body += d;
        return true;
    };
    if (cut < raw.size()) {
        p.feed(raw.substr(0, cut), onBody);
        p.feed(raw.substr(cut), onBody);
    } else {
        p.feed(raw, onBody);
    }
    out.done = closeAtEnd ? p.closeEndsBody() : p.done();
    out.status = p.status();
    return out;
}

const std::string kChunked =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    "5\r\nhello\r\n1;ext=1\r\n \r\nb\r\nwatch event\r\n0\r\nX-Trailer: t\r\n\r\n";

TEST(HttpResponseParser, ChunkedBodyDecodedWhereverTheBytesAreCut) {
    for (size_t cut = 0; cut <= kChunked.size(); ++cut) {
        Parsed p = parse(kChunked, cut);
        ASSERT_EQ(p.body, "hello watch event") << "cut at " << cut;
        EXPECT_TRUE(p.done) << "cut at " << cut;
        EXPECT_EQ(p.status, 200);
    }
}

TEST(HttpResponseParser, ContentLengthAndCloseDelimitedBodies) {
    Parsed fixed = parse("HTTP/1.1 410 Gone\r\ncontent-length: 4\r\n\r\ngoneEXTRA");
    EXPECT_EQ(fixed.status, 410);
    EXPECT_EQ(fixed.body, "gone");
    EXPECT_TRUE(fixed.done);

    EXPECT_TRUE(parse("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").done);
    EXPECT_TRUE(parse("HTTP/1.1 204 No Content\r\n\r\n").done);

    Parsed untilClose = parse("HTTP/1.0 200 OK\r\n\r\nall of it", std::string_view::npos, true);
    EXPECT_EQ(untilClose.body, "all of it");
    EXPECT_TRUE(untilClose.done);
}

TEST(HttpResponseParser, InterimResponsesAreSkipped) {
    Parsed p = parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    EXPECT_EQ(p.status, 200);
    EXPECT_EQ(p.body, "ok");
}

TEST(HttpResponseParser, ACutOffBodyIsNotComplete) {
    EXPECT_FALSE(parse(kChunked.substr(0, kChunked.size() - 10), std::string_view::npos, true).done);
    EXPECT_FALSE(parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", std::string_view::npos, true).done);
    EXPECT_FALSE(parse("HTTP/1.1 200 OK\r\nContent-", std::string_view::npos, true).done);
}

TEST(HttpResponseParser, MalformedResponsesAreRejectedWithTheReason) {
    auto error = [](const std::string& raw) {
        try {
            parse(raw);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_THAT(error("SSH-2.0-OpenSSH\r\n"), HasSubstr("bad status line 'SSH-2.0-OpenSSH'"));
    EXPECT_THAT(error("HTTP/1.1 2x0 OK\r\n"), HasSubstr("bad status line"));
    EXPECT_THAT(error("HTTP/1.1 099 Odd\r\n"), HasSubstr("bad status line"));
    EXPECT_THAT(error("HTTP/1.1 200 OK\r\nno colon here\r\n"), HasSubstr("bad header line"));
    EXPECT_THAT(error("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"), HasSubstr("bad Content-Length"));
    EXPECT_THAT(error("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), HasSubstr("conflicting"));
    EXPECT_THAT(error("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"), HasSubstr("unsupported Transfer-Encoding"));
    EXPECT_THAT(error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), HasSubstr("bad chunk size line"));
    EXPECT_THAT(error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n"), HasSubstr("too large"));
    EXPECT_THAT(error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n"), HasSubstr("not followed by CRLF"));
    EXPECT_THAT(error("HTTP/1.1 200 OK\r\nX: " + std::string(HttpResponseParser::kMaxHeadBytes, 'a')),
                HasSubstr("headers longer than"));
    EXPECT_THAT(error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1" + std::string(2000, ' ')),
                HasSubstr("chunk size line longer than"));
}

TEST(HttpResponseParser, OnBodyCanStopParsing) {
    HttpResponseParser p;
    int calls = 0;
    EXPECT_FALSE(p.feed(kChunked, [&](std::string_view) { return ++calls < 2; }));
    EXPECT_EQ(calls, 2);
    EXPECT_FALSE(p.done());
}

TEST(KubeHttpClient, ParsesServerUrls) {
    auto u = KubeHttpClient::parseUrl("https://10.96.0.1:443");
    EXPECT_TRUE(u.tls);
    EXPECT_EQ(u.host, "10.96.0.1");
    EXPECT_EQ(u.port, "443");
    u = KubeHttpClient::parseUrl("https://kind-control-plane:6443/");
    EXPECT_EQ(u.host, "kind-control-plane");
    EXPECT_EQ(u.basePath, "");
    u = KubeHttpClient::parseUrl("http://[fd00::1]/k8s");
    EXPECT_FALSE(u.tls);
    EXPECT_EQ(u.host, "fd00::1");
    EXPECT_EQ(u.port, "80");
    EXPECT_EQ(u.basePath, "/k8s");
    for (const char* bad : {"10.96.0.1:443", "ftp://x", "https://", "https://h:0", "https://h:65536", "https://h:x",
                            "https://[::1", "https://[::1]x", "https://user@h"})
        EXPECT_THROW(KubeHttpClient::parseUrl(bad), Error) << bad;
}

// A loopback listener that answers the first connection with `reply`, then
// keeps it open (`holdOpen`) or closes it.
class ScriptedServer {
public:
    ScriptedServer(std::string reply, bool holdOpen) {
        fd_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_.get(), 4) != 0)
            throwErrno("listen");
        getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this, reply = std::move(reply), holdOpen] {
            UniqueFd c(::accept(fd_.get(), nullptr, nullptr));
            char buf[4096];
            std::string req;
            while (req.find("\r\n\r\n") == std::string::npos) {
                ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
                if (n <= 0) return;
                req.append(buf, static_cast<size_t>(n));
            }
            request_.set_value(req);
            ::send(c.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
            if (holdOpen) ::recv(c.get(), buf, sizeof buf, 0);  // until the client closes
        });
    }
    ~ScriptedServer() {
        ::shutdown(fd_.get(), SHUT_RDWR);
        thread_.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/base"; }
    std::string request() { return request_.get_future().get(); }

private:
    UniqueFd fd_;
    int port_ = 0;
    std::promise<std::string> request_;
    std::thread thread_;
};

// The scripted servers speak plain http: the token goes there on purpose.
KubeCredentials plain(const std::string& url) {
    KubeCredentials c;
    c.server = url;
    c.token = "t0ken";
    c.allowUnprotectedToken = true;
    return c;
}

// What constructing a client with `c` throws; "" when it does not.
std::string refusal(const KubeCredentials& c) {
    try {
        KubeHttpClient client(c);
    } catch (const kovs::Error& e) {
        return e.what();
    }
    return "";
}

// Before this refusal the token went out over http:// and to any server
// when insecure-skip-tls-verify was set; now that needs a flag on purpose.
TEST(KubeHttpClient, RefusesToSendTheTokenUnprotected) {
    auto overHttp = plain("http://127.0.0.1:6443");
    overHttp.allowUnprotectedToken = false;
    EXPECT_THAT(refusal(overHttp), HasSubstr("API server http://127.0.0.1:6443: refusing to send the bearer token over plain http"));
    EXPECT_THAT(refusal(overHttp), HasSubstr("peers.allowUnprotectedToken"));
    auto fromFile = overHttp;
    fromFile.token.clear();
    fromFile.tokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token";
    EXPECT_THAT(refusal(fromFile), HasSubstr("over plain http"));
    auto unverified = overHttp;
    unverified.server = "https://127.0.0.1:6443";
    unverified.insecureSkipTlsVerify = true;
    EXPECT_THAT(refusal(unverified), HasSubstr("refusing to send the bearer token with insecure-skip-tls-verify"));
    // No token, nothing to protect; https with a verified certificate, or the flag: accepted.
    auto anonymous = overHttp;
    anonymous.token.clear();
    EXPECT_EQ(refusal(anonymous), "");
    unverified.insecureSkipTlsVerify = false;
    EXPECT_EQ(refusal(unverified), "");
    EXPECT_EQ(refusal(plain("http://127.0.0.1:6443")), "");
}

TEST(KubeHttpClient, StreamsAChunkedBodyAndSendsTheToken) {
    ScriptedServer server(kChunked, false);
    KubeHttpClient client(plain(server.url()));
    std::string body;
    auto r = client.get("/api/v1/nodes?watch=1", [&](long status, std::string_view d) {
        EXPECT_EQ(status, 200);
        body += d;
        return true;
    }, std::chrono::seconds(5));
    EXPECT_TRUE(r.complete) << r.error;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(body, "hello watch event");
    std::string req = server.request();
    EXPECT_THAT(req, HasSubstr("GET /base/api/v1/nodes?watch=1 HTTP/1.1\r\n"));
    EXPECT_THAT(req, HasSubstr("Authorization: Bearer t0ken\r\n"));
}

TEST(KubeHttpClient, ABodyCutOffIsReportedIncomplete) {
    ScriptedServer server("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", false);
    KubeHttpClient client(plain(server.url()));
    auto r = client.get("/x", [](long, std::string_view) { return true; }, std::chrono::seconds(5));
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.status, 200);
    EXPECT_THAT(r.error, HasSubstr("connection closed before the end of the body"));
}

TEST(KubeHttpClient, ASilentServerHitsTheIdleTimeout) {
    ScriptedServer server("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", true);
    KubeHttpClient client(plain(server.url()));
    auto r = client.get("/x", [](long, std::string_view) { return true; }, std::chrono::seconds(1));
    EXPECT_FALSE(r.complete);
    EXPECT_FALSE(r.interrupted);
    EXPECT_THAT(r.error, HasSubstr("no data for 1 s"));
}

TEST(KubeHttpClient, InterruptWakesABlockedGetAndEveryLaterOne) {
    ScriptedServer server("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", true);
    KubeHttpClient client(plain(server.url()));
    auto blocked = std::async(std::launch::async, [&] {
        return client.get("/x", [](long, std::string_view) { return true; }, std::chrono::seconds(60));
    });
    server.request();  // the GET is on the wire and now waits for a body
    client.interrupt();
    ASSERT_EQ(blocked.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "interrupt() did not wake get()";
    EXPECT_TRUE(blocked.get().interrupted);
    EXPECT_TRUE(client.get("/y", [](long, std::string_view) { return true; }, std::chrono::seconds(1)).interrupted);
}

TEST(KubeHttpClient, OnDataCanAbort) {
    ScriptedServer server(kChunked, false);
    KubeHttpClient client(plain(server.url()));
    auto r = client.get("/x", [](long, std::string_view) { return false; }, std::chrono::seconds(5));
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.error, "aborted by the client");
}

TEST(KubeHttpClient, ConnectionRefusedNamesTheServer) {
    std::string url;
    {
        ScriptedServer gone("", false);  // a port that was just free
        url = gone.url();
        KubeHttpClient(plain(url)).get("/", [](long, std::string_view) { return true; }, std::chrono::seconds(1));
    }
    auto r = KubeHttpClient(plain(url)).get("/", [](long, std::string_view) { return true; }, std::chrono::seconds(1));
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.status, 0);
    EXPECT_THAT(r.error, HasSubstr("connect to 127.0.0.1:"));
    EXPECT_THAT(r.error, HasSubstr("Connection refused"));
}

}  // namespace
