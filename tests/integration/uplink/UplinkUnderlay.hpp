#pragma once
// The node side of a kind node's uplink, in the test binary's private netns:
// "eth0" is a veth whose peer "hveth" lives in a "host" netns (as a kind
// node's eth0 faces the Docker host), with IPv4 + IPv6 addresses and routes
// as Docker gives them. Also the witnesses the uplink tests read: `ip -j`
// snapshots, ping, and host -> node TCP through the host veth at its default
// offloads (the case the shim exists for).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/Error.hpp"
#include "base/Process.hpp"
#include "base/UniqueFd.hpp"
#include "tests/support/Poll.hpp"

namespace kovs::test {

inline nlohmann::json ipJson(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"ip", "-j"};
    argv.insert(argv.end(), args.begin(), args.end());
    return nlohmann::json::parse(runChecked(argv));
}

// What cleanup must give back exactly: eth0's link and addresses, every route.
struct NetState {
    nlohmann::json addr, routes4, routes6;
    bool operator==(const NetState&) const = default;
};

inline NetState netState() {
    return {ipJson({"addr", "show", "dev", "eth0"}), ipJson({"-4", "route", "show"}), ipJson({"-6", "route", "show"})};
}

inline bool linkExists(const std::string& n) { return runProcess({"ip", "link", "show", "dev", n}).ok(); }

// The non-link-scope addresses of `dev` as "a/n", in the kernel's order.
inline nlohmann::json addrsOf(const std::string& dev) {
    nlohmann::json out = nlohmann::json::array();
    auto link = ipJson({"addr", "show", "dev", dev});
    for (const auto& a : link.at(0).at("addr_info")) {
        if (a.value("scope", "") != "link")
            out.push_back(a.at("local").get<std::string>() + "/" + std::to_string(a.at("prefixlen").get<int>()));
    }
    return out;
}

inline std::string macOf(const std::string& dev) {
    return ipJson({"link", "show", "dev", dev}).at(0).at("address").get<std::string>();
}

// Receives everything sent to `port` on the node; finish() returns the byte count.
class TcpSink {
public:
    explicit TcpSink(uint16_t port) {
        fd_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        int one = 1;
        ::setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(port);
        if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 || ::listen(fd_.get(), 1) < 0)
            throwErrno("TcpSink bind/listen");
        thread_ = std::thread([this] {
            UniqueFd c(::accept(fd_.get(), nullptr, nullptr));
            if (!c) return;
            timeval tv{10, 0};
            ::setsockopt(c.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            char buf[65536];
            ssize_t n;
            while ((n = ::read(c.get(), buf, sizeof buf)) > 0) received_ += static_cast<size_t>(n);
        });
    }
    ~TcpSink() { finish(); }
    TcpSink(const TcpSink&) = delete;
    TcpSink& operator=(const TcpSink&) = delete;

    size_t finish() {
        ::shutdown(fd_.get(), SHUT_RDWR);
        if (thread_.joinable()) thread_.join();
        return received_;
    }

private:
    UniqueFd fd_;
    std::thread thread_;
    std::atomic<size_t> received_{0};
};

class Underlay {
public:
    static constexpr const char* kHostNs = "uphost";
    static constexpr const char* kNodeIp = "172.31.0.2";
    static constexpr const char* kHostIp = "172.31.0.1";

    Underlay() { create(""); }
    ~Underlay() { destroy(); }
    Underlay(const Underlay&) = delete;
    Underlay& operator=(const Underlay&) = delete;

    // eth0 and its peer vanish with every device of the node, as in a reboot,
    // and come back with `mac` (Docker gives a container the same MAC for the
    // same IP) and the same addressing.
    void recreate(const std::string& mac) {
        destroy();
        create(mac);
    }

    bool pingHost() const {
        return pollUntil([] { return runProcess({"ping", "-c1", "-W1", kHostIp}).ok(); }, std::chrono::seconds(10)) &&
               pollUntil([] { return runProcess({"ping", "-6", "-c1", "-W1", "fd31::1"}).ok(); }, std::chrono::seconds(10));
    }

    // Host -> node TCP through the host-side veth at its default offloads.
    size_t hostToNodeBytes(size_t bytes = 512 * 1024) const {
        TcpSink sink(5555);
        ProcessOptions o;
        o.stdinData = std::string(bytes, 'x');
        auto r = runProcess({"ip", "netns", "exec", kHostNs, "socat", "-u", "-", "TCP:172.31.0.2:5555,connect-timeout=5"}, o);
        if (!r.ok()) ADD_FAILURE() << "socat host -> node: " << r.err;
        return sink.finish();
    }

    std::string hostVethOffloads() const { return runChecked({"ip", "netns", "exec", kHostNs, "ethtool", "-k", "hveth"}); }

private:
    static void disableDad(const std::string& dev) { std::ofstream("/proc/sys/net/ipv6/conf/" + dev + "/accept_dad") << "0"; }

    void create(const std::string& mac) {
        runProcess({"ip", "netns", "del", kHostNs});  // a crashed run's leftover
        runChecked({"ip", "netns", "add", kHostNs});
        std::vector<std::string> add{"ip", "link", "add", "eth0"};
        if (!mac.empty()) add.insert(add.end(), {"address", mac});
        add.insert(add.end(), {"type", "veth", "peer", "name", "hveth", "netns", kHostNs});
        runChecked(add);
        disableDad("eth0");
        runChecked({"ip", "netns", "exec", kHostNs, "sysctl", "-qw", "net.ipv6.conf.hveth.accept_dad=0"});
        runChecked({"ip", "-n", kHostNs, "addr", "add", "172.31.0.1/24", "dev", "hveth"});
        runChecked({"ip", "-n", kHostNs, "addr", "add", "fd31::1/64", "dev", "hveth", "nodad"});
        runChecked({"ip", "-n", kHostNs, "link", "set", "hveth", "up"});
        runChecked({"ip", "-n", kHostNs, "link", "set", "lo", "up"});
        runChecked({"ip", "addr", "add", "172.31.0.2/24", "dev", "eth0"});
        runChecked({"ip", "addr", "add", "fd31::2/64", "dev", "eth0", "nodad"});
        runChecked({"ip", "link", "set", "eth0", "up"});
        runChecked({"ip", "route", "add", "default", "via", "172.31.0.1"});
        runChecked({"ip", "route", "add", "10.99.0.0/16", "via", "172.31.0.1", "metric", "50"});
        runChecked({"ip", "-6", "route", "add", "default", "via", "fd31::1"});
        // DAD state is timing, not configuration: callers snapshot once it settled.
        if (!pollUntil([] { return runChecked({"ip", "-j", "addr", "show", "dev", "eth0"}).find("tentative") == std::string::npos; },
                       std::chrono::seconds(10)))
            throw Error("underlay: eth0's addresses stay tentative");
    }

    void destroy() {
        runProcess({"ip", "netns", "del", kHostNs});  // takes eth0 (its veth peer) along
        runProcess({"ip", "link", "del", "eth0"});
    }
};

}  // namespace kovs::test
