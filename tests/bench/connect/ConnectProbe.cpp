// kovs-connect-probe: the TCP_CRR shape (connect, 1 byte each way, close)
// for the connection benchmark (tests/bench/cluster/connect_bench.sh), both
// ends, run inside the pods' network namespaces:
//
//   kovs-connect-probe serve PORT
//       answers every connection: reads one byte, writes one byte, closes
//   kovs-connect-probe first ADDR PORT SINCE_NS
//       one connection, started at once, with the kernel's own SYN
//       retransmits (3 s at most); prints its completion time from SINCE_NS
//       (CLOCK_REALTIME in ns, as bash's ${EPOCHREALTIME/./}000: when a
//       pod's CNI ADD returned) as
//       JSON: ms, ok. A first SYN lost shows as a second.
//   kovs-connect-probe connect ADDR PORT COUNT PARALLEL [TIMEOUT_MS [DURATION_MS]]
//       COUNT connections over PARALLEL threads, each one after the other
//       (or as many as DURATION_MS allows, to straddle a restart);
//       prints one JSON line: count, failures, seconds, rate, p50/p99/p999
//       and max latency (ms), connections over 200 ms and over 1 s (a SYN
//       retransmit costs 1 s), and the longest gap between two completed
//       connections (what a restart costs).
// A connection that has not completed after TIMEOUT_MS (default 3000) is a
// failure. Bounded in count and time; talks only to the address it is given.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "kovs-connect-probe: %s: %s\n", what.c_str(), std::strerror(errno));
    std::exit(1);
}

struct Target {
    sockaddr_storage addr{};
    socklen_t len = 0;
};

Target parseTarget(const char* ip, int port) {
    Target t;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&t.addr);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&t.addr);
    if (::inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(static_cast<uint16_t>(port));
        t.len = sizeof *v4;
    } else if (::inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(static_cast<uint16_t>(port));
        t.len = sizeof *v6;
    } else {
        std::fprintf(stderr, "kovs-connect-probe: '%s' is not an IP address\n", ip);
        std::exit(2);
    }
    return t;
}

int parsePositive(const char* s, const char* what, long max) {
    char* end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (!end || *end || v < 1 || v > max) {
        std::fprintf(stderr, "kovs-connect-probe: %s: expected 1-%ld, got '%s'\n", what, max, s);
        std::exit(2);
    }
    return static_cast<int>(v);
}

// Waits for `events` on fd until `deadline`; false on timeout or error.
bool waitFor(int fd, short events, Clock::time_point deadline) {
    while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd, events, 0};
        int n = ::poll(&p, 1, static_cast<int>(left));
        if (n > 0) return (p.revents & (POLLERR | POLLNVAL)) == 0 || (p.revents & events);
        if (n < 0 && errno != EINTR) return false;
    }
}

// One connection, as TCP_CRR does it; false when any step fails or times out.
bool oneConnection(const Target& t, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    int fd = ::socket(t.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    bool ok = false;
    char c = 'k';
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&t.addr), t.len) == 0 || errno == EINPROGRESS) {
        int err = 0;
        socklen_t len = sizeof err;
        if (waitFor(fd, POLLOUT, deadline) && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 &&
            ::send(fd, &c, 1, MSG_NOSIGNAL) == 1 && waitFor(fd, POLLIN, deadline) && ::recv(fd, &c, 1, 0) == 1) {
            ok = true;
        }
    }
    ::close(fd);
    return ok;
}

int serve(int port) {
    int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int zero = 0, one = 1;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // both families
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(static_cast<uint16_t>(port));
    sa.sin6_addr = in6addr_any;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) die("bind port " + std::to_string(port));
    // A backlog that 8 clients' SYNs never overflow: a dropped SYN is
    // retransmitted after 1 s, which is what the benchmark looks for.
    if (::listen(fd, 4096) < 0) die("listen");
    std::vector<std::thread> workers;
    for (int i = 0; i < 8; ++i) {
        workers.emplace_back([fd] {
            while (true) {
                int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
                if (c < 0) continue;
                timeval tv{3, 0};
                ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                char b;
                if (::recv(c, &b, 1, 0) == 1) ::send(c, &b, 1, MSG_NOSIGNAL);
                ::close(c);
            }
        });
    }
    for (auto& w : workers) w.join();
    return 0;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

int connectMany(const Target& t, int count, int parallel, std::chrono::milliseconds timeout,
                std::chrono::milliseconds duration) {
    std::atomic<int> next{0};
    std::mutex mu;
    std::vector<double> latencies;
    std::vector<Clock::time_point> completions;
    latencies.reserve(static_cast<size_t>(count));
    completions.reserve(static_cast<size_t>(count));
    int failures = 0;
    auto start = Clock::now();
    auto end = start + duration;
    std::vector<std::thread> threads;
    for (int i = 0; i < parallel; ++i) {
        threads.emplace_back([&] {
            while (next.fetch_add(1) < count && Clock::now() < end) {
                auto t0 = Clock::now();
                bool ok = oneConnection(t, timeout);
                auto t1 = Clock::now();
                std::lock_guard<std::mutex> lock(mu);
                if (ok) {
                    latencies.push_back(ms(t1 - t0));
                    completions.push_back(t1);
                } else {
                    ++failures;
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    double seconds = ms(Clock::now() - start) / 1000;
    std::sort(latencies.begin(), latencies.end());
    std::sort(completions.begin(), completions.end());
    auto pct = [&](double p) {
        if (latencies.empty()) return 0.0;
        auto i = static_cast<size_t>(p * static_cast<double>(latencies.size() - 1) + 0.5);
        return latencies[std::min(i, latencies.size() - 1)];
    };
    auto over = [&](double limit) { return std::count_if(latencies.begin(), latencies.end(), [&](double l) { return l > limit; }); };
    double gap = completions.empty() ? ms(Clock::now() - start) : ms(completions.front() - start);
    for (size_t i = 1; i < completions.size(); ++i) gap = std::max(gap, ms(completions[i] - completions[i - 1]));
    std::printf("{\"count\": %zu, \"failures\": %d, \"seconds\": %.3f, \"rate\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f, "
                "\"p999_ms\": %.3f, \"max_ms\": %.3f, \"over_200ms\": %ld, \"over_1s\": %ld, \"max_gap_ms\": %.1f}\n",
                latencies.size() + static_cast<size_t>(failures), failures, seconds, static_cast<double>(latencies.size()) / seconds, pct(0.5), pct(0.99), pct(0.999),
                latencies.empty() ? 0.0 : latencies.back(), static_cast<long>(over(200)), static_cast<long>(over(1000)), gap);
    return 0;
}

int firstConnection(const Target& t, const char* sinceNs) {
    char* end = nullptr;
    long long since = std::strtoll(sinceNs, &end, 10);
    if (!end || *end || since <= 0) {
        std::fprintf(stderr, "kovs-connect-probe: SINCE_NS: expected nanoseconds since the epoch, got '%s'\n", sinceNs);
        return 2;
    }
    bool ok = oneConnection(t, std::chrono::milliseconds(3000));
    auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::printf("{\"ms\": %.3f, \"ok\": %s}\n", static_cast<double>(now - since) / 1e6, ok ? "true" : "false");
    return 0;
}

void usage() {
    std::fprintf(stderr, "usage: kovs-connect-probe serve PORT\n"
                         "       kovs-connect-probe first ADDR PORT SINCE_NS\n"
                         "       kovs-connect-probe connect ADDR PORT COUNT PARALLEL [TIMEOUT_MS [DURATION_MS]]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) usage();
    std::string mode = argv[1];
    if (mode == "serve" && argc == 3) return serve(parsePositive(argv[2], "PORT", 65535));
    if (mode == "first" && argc == 5) return firstConnection(parseTarget(argv[2], parsePositive(argv[3], "PORT", 65535)), argv[4]);
    if (mode == "connect" && argc >= 6 && argc <= 8) {
        auto t = parseTarget(argv[2], parsePositive(argv[3], "PORT", 65535));
        int count = parsePositive(argv[4], "COUNT", 10'000'000);
        int parallel = parsePositive(argv[5], "PARALLEL", 64);
        auto timeout = std::chrono::milliseconds(argc >= 7 ? parsePositive(argv[6], "TIMEOUT_MS", 60'000) : 3000);
        auto duration = std::chrono::milliseconds(argc == 8 ? parsePositive(argv[7], "DURATION_MS", 600'000) : 600'000);
        return connectMany(t, count, parallel, timeout, duration);
    }
    usage();
}
