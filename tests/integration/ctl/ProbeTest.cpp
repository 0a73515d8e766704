// kovsctl probe, the real binary (KOVSCTL), between two network namespaces
// joined by a veth: the server answers both families; check reports each
// outcome the smoke test must tell apart, in one line with a plain reason:
// answered, refused, dropped (no answer), handshake without data, no echo
// reply, a name that does not resolve; exit 0 only when every target is ok.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "tests/support/Poll.hpp"
#include "tests/support/TestNetns.hpp"

extern "C" char** environ;

namespace {

using kovs::test::TestNetns;

std::string kovsctl() {
    const char* p = std::getenv("KOVSCTL");
    return p ? p : "ctl/kovsctl";
}

// A background process (argv), killed and reaped at the end of the test.
class Background {
public:
    explicit Background(std::vector<std::string> args) {
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawnattr_t attr;
        kovs::initSpawnAttrs(attr);
        int rc = posix_spawnp(&pid_, argv[0], nullptr, &attr, argv.data(), environ);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) throw kovs::SystemError("spawn " + args[0], rc);
    }
    ~Background() {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;

private:
    pid_t pid_ = -1;
};

class ProbeBetweenNamespaces : public ::testing::Test {
protected:
    void SetUp() override {
        kovs::runChecked({"ip", "link", "add", "pr-a", "netns", a_.name(), "type", "veth", "peer", "name", "pr-b", "netns", b_.name()});
        for (auto [ns, dev, v4, v6] : {std::tuple{&a_, "pr-a", "10.99.0.1/24", "fd99::1/64"}, {&b_, "pr-b", "10.99.0.2/24", "fd99::2/64"}}) {
            kovs::runChecked({"ip", "-n", ns->name(), "addr", "add", v4, "dev", dev});
            kovs::runChecked({"ip", "-n", ns->name(), "addr", "add", v6, "dev", dev, "nodad"});
            kovs::runChecked({"ip", "-n", ns->name(), "link", "set", dev, "up"});
        }
        server_ = std::make_unique<Background>(std::vector<std::string>{"ip", "netns", "exec", a_.name(), kovsctl(), "probe", "serve", "--port", "8080"});
        ASSERT_TRUE(kovs::test::pollUntil([&] { return a_.exec({"ss", "-Hltn", "sport = :8080"}).out.find("8080") != std::string::npos; },
                                          std::chrono::seconds(10), std::chrono::milliseconds(20)))
            << "kovsctl probe serve did not listen";
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        hostname_ = host;
    }
    // kovsctl probe check TARGETS... from namespace B, 1 s a target.
    kovs::ProcessResult check(const TestNetns& from, std::vector<std::string> targets) {
        std::vector<std::string> argv{kovsctl(), "probe", "check", "--timeout", "1"};
        argv.insert(argv.end(), targets.begin(), targets.end());
        return from.exec(argv);
    }
    TestNetns a_{"kovs-probe-a"}, b_{"kovs-probe-b"};
    std::unique_ptr<Background> server_;
    std::string hostname_;
};

TEST_F(ProbeBetweenNamespaces, AnsweredOverBothFamiliesAndByName) {
    auto r = check(b_, {"pod=tcp:10.99.0.1:8080", "pod6=tcp:[fd99::1]:8080", "egress=ping:10.99.0.1", "egress6=ping:fd99::1"});
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("  ok    pod            answered by " + hostname_ + " (10.99.0.1:8080, "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  ok    pod6           answered by " + hostname_ + " ([fd99::1]:8080, "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  ok    egress         echo reply from 10.99.0.1 in "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  ok    egress6        echo reply from fd99::1 in "), std::string::npos) << r.out;
    // A name, resolved as the pod resolves it (here /etc/hosts: localhost).
    auto byName = check(a_, {"dns=tcp:localhost:8080"});
    EXPECT_EQ(byName.exitCode, 0) << byName.out << byName.err;
    EXPECT_NE(byName.out.find("answered by " + hostname_ + " (localhost -> "), std::string::npos) << byName.out;
}

// The ping socket (net.ipv4.ping_group_range) and the raw socket it falls
// back to (CAP_NET_RAW) both get the reply.
TEST_F(ProbeBetweenNamespaces, PingThroughAPingSocketToo) {
    b_.exec({"sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647"});
    ASSERT_EQ(b_.exec({"sysctl", "-n", "net.ipv4.ping_group_range"}).out.substr(0, 2), "0\t");
    auto r = check(b_, {"egress=ping:10.99.0.1", "egress6=ping:fd99::1"});
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
}

TEST_F(ProbeBetweenNamespaces, EachFailureWithItsPlainReason) {
    // A listener that accepts and never answers: the handshake passes, the data does not.
    Background mute({"ip", "netns", "exec", a_.name(), "python3", "-c",
                     "import socket,time\ns=socket.socket()\ns.bind(('10.99.0.1',8082))\ns.listen()\nc=s.accept()\ntime.sleep(60)"});
    ASSERT_TRUE(kovs::test::pollUntil([&] { return a_.exec({"ss", "-Hltn", "sport = :8082"}).out.find("8082") != std::string::npos; },
                                      std::chrono::seconds(10), std::chrono::milliseconds(20)));
    auto r = check(b_, {"ok=tcp:10.99.0.1:8080", "refused=tcp:10.99.0.1:8081", "dropped=tcp:10.99.0.3:8080", "mute=tcp:10.99.0.1:8082",
                        "noreply=ping:10.99.0.3", "noroute=tcp:10.98.0.1:80", "noname=tcp:no-such-host.invalid:80"});
    EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
    for (const char* want : {
             "  ok    ok             answered by ",
             "  FAIL  refused        refused by 10.99.0.1:8081: nothing listens there (or a Service without ready endpoints)\n",
             "  FAIL  dropped        no answer from 10.99.0.3:8080 in 1 s (dropped on the way, or nothing there)\n",
             "  FAIL  mute           connected to 10.99.0.1:8082 but no answer in 1 s (the handshake passed, the data did not: MTU or "
             "checksum offload?)\n",
             "  FAIL  noreply        no echo reply from 10.99.0.3 in 1 s (dropped on the way, or the host does not answer)\n",
             "  FAIL  noroute        10.98.0.1:80 unreachable: Network is unreachable (no route from here, or no neighbour answered)\n",
             "  FAIL  noname         cannot resolve no-such-host.invalid: ",
         }) {
        EXPECT_NE(r.out.find(want), std::string::npos) << "missing: " << want << "\n" << r.out;
    }
}

TEST_F(ProbeBetweenNamespaces, BadTargetsAreRefusedBeforeAnyProbe) {
    auto r = check(b_, {"ok=tcp:10.99.0.1:8080", "Bad=tcp:10.99.0.1:8080"});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_NE(r.err.find("kovsctl probe: probe target 'Bad=tcp:10.99.0.1:8080': the name must be lower-case"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "probed before refusing a bad target";
    auto taken = a_.exec({kovsctl(), "probe", "serve", "--port", "8080"});
    EXPECT_EQ(taken.exitCode, 2);
    EXPECT_NE(taken.err.find("kovsctl probe: listen on port 8080: Address already in use"), std::string::npos) << taken.err;
}

}  // namespace
