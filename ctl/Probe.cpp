#include "ctl/Probe.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <regex>

#include "base/Error.hpp"
#include "base/UniqueFd.hpp"

namespace kovs::ctl {
namespace {

using Clock = std::chrono::steady_clock;

bool isAddress(const std::string& s, bool* v6 = nullptr) {
    in6_addr buf{};
    if (::inet_pton(AF_INET, s.c_str(), &buf) == 1) {
        if (v6) *v6 = false;
        return true;
    }
    if (::inet_pton(AF_INET6, s.c_str(), &buf) == 1) {
        if (v6) *v6 = true;
        return true;
    }
    return false;
}

// Milliseconds left until the deadline, at least 0, for poll().
int msLeft(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? static_cast<int>(left) : 0;
}

std::string msSince(Clock::time_point start) {
    return fmt::format("{:.1f} ms", std::chrono::duration<double, std::milli>(Clock::now() - start).count());
}

std::string seconds(std::chrono::milliseconds d) { return fmt::format("{:g} s", d.count() / 1000.0); }

// Waits for `events` on fd until the deadline; false on timeout.
bool waitFor(int fd, short events, Clock::time_point deadline) {
    pollfd p{fd, events, 0};
    for (;;) {
        int n = ::poll(&p, 1, msLeft(deadline));
        if (n > 0) return true;
        if (n == 0) return false;
        if (errno != EINTR) throwErrno("poll");
    }
}

std::string numericHost(const sockaddr* sa, socklen_t len) {
    char host[NI_MAXHOST] = {};
    if (::getnameinfo(sa, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
    return host;
}

uint16_t internetChecksum(const uint8_t* data, size_t len) {
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(data[i] << 8 | data[i + 1]);
    if (len % 2) sum += static_cast<uint32_t>(data[len - 1] << 8);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

std::string connectFailure(int err, const std::string& where) {
    switch (err) {
        case ECONNREFUSED:
            return "refused by " + where + ": nothing listens there (or a Service without ready endpoints)";
        case EHOSTUNREACH:
        case ENETUNREACH:
            return where + " unreachable: " + std::strerror(err) + " (no route from here, or no neighbour answered)";
        default:
            return "connect to " + where + ": " + std::strerror(err);
    }
}

}  // namespace

ProbeTarget parseProbeTarget(const std::string& spec) {
    auto fail = [&](const std::string& why) -> ProbeTarget {
        throw Error("probe target '" + spec + "': " + why + " (expected NAME=tcp:HOST:PORT or NAME=ping:ADDRESS)");
    };
    static const std::regex nameRe("[a-z0-9][a-z0-9./_-]{0,62}");
    static const std::regex dnsRe("[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\\.?");
    ProbeTarget t;
    auto eq = spec.find('=');
    if (eq == std::string::npos) return fail("no NAME=");
    t.name = spec.substr(0, eq);
    if (!std::regex_match(t.name, nameRe))
        return fail("the name must be lower-case letters, digits, '.', '/', '_' or '-' (at most 63)");
    auto rest = spec.substr(eq + 1);
    if (rest.rfind("ping:", 0) == 0) {
        t.kind = ProbeTarget::Kind::Ping;
        t.host = rest.substr(5);
        if (!isAddress(t.host)) return fail("ping needs an IPv4 or IPv6 address, got '" + t.host + "'");
        return t;
    }
    if (rest.rfind("tcp:", 0) != 0) return fail("unknown kind '" + rest.substr(0, rest.find(':')) + "'");
    auto hostPort = rest.substr(4);
    std::string port;
    if (!hostPort.empty() && hostPort[0] == '[') {
        auto close = hostPort.find(']');
        if (close == std::string::npos || close + 1 >= hostPort.size() || hostPort[close + 1] != ':')
            return fail("an IPv6 address goes in brackets, then ':PORT'");
        t.host = hostPort.substr(1, close - 1);
        port = hostPort.substr(close + 2);
        bool v6 = false;
        if (!isAddress(t.host, &v6) || !v6) return fail("'" + t.host + "' in brackets is not an IPv6 address");
    } else {
        auto colon = hostPort.rfind(':');
        if (colon == std::string::npos) return fail("no ':PORT'");
        t.host = hostPort.substr(0, colon);
        port = hostPort.substr(colon + 1);
        if (t.host.find(':') != std::string::npos) return fail("an IPv6 address goes in brackets: tcp:[ADDRESS]:PORT");
        if (t.host.size() > 253 || (!isAddress(t.host) && !std::regex_match(t.host, dnsRe)))
            return fail("'" + t.host + "' is neither an address nor a DNS name");
    }
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || port[0] == '0' ||
        std::stoul(port) > 65535)
        return fail("port '" + port + "': expected 1-65535");
    t.port = static_cast<uint16_t>(std::stoul(port));
    return t;
}

ProbeResult probeTcp(const ProbeTarget& t, std::chrono::milliseconds timeout) {
    auto start = Clock::now();
    auto deadline = start + timeout;
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    auto portText = std::to_string(t.port);
    if (int rc = ::getaddrinfo(t.host.c_str(), portText.c_str(), &hints, &found); rc != 0) {
        return {false, "cannot resolve " + t.host + ": " + ::gai_strerror(rc) +
                           (isAddress(t.host) ? "" : " (the pod's DNS server: /etc/resolv.conf)")};
    }
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(found, ::freeaddrinfo);
    auto addr = numericHost(found->ai_addr, found->ai_addrlen);
    auto where = (found->ai_family == AF_INET6 ? "[" + addr + "]" : addr) + ":" + portText;
    if (!isAddress(t.host)) where = t.host + " -> " + where;

    UniqueFd fd(::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return {false, std::string("socket: ") + std::strerror(errno)};
    if (::connect(fd.get(), found->ai_addr, found->ai_addrlen) < 0 && errno != EINPROGRESS)
        return {false, connectFailure(errno, where)};
    if (!waitFor(fd.get(), POLLOUT, deadline))
        return {false, "no answer from " + where + " in " + seconds(timeout) + " (dropped on the way, or nothing there)"};
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return {false, connectFailure(err, where)};

    auto request = "GET / HTTP/1.0\r\nHost: " + t.host + "\r\nUser-Agent: kovsctl-probe\r\n\r\n";
    if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) < 0)
        return {false, "connected to " + where + ", then send: " + std::strerror(errno)};
    std::string response;
    char buf[2048];
    for (;;) {
        if (!waitFor(fd.get(), POLLIN, deadline)) {
            return {false, "connected to " + where + " but no answer in " + seconds(timeout) +
                               " (the handshake passed, the data did not: MTU or checksum offload?)"};
        }
        auto n = ::recv(fd.get(), buf, sizeof buf, 0);
        if (n > 0) {
            response.append(buf, static_cast<size_t>(n));
            if (response.size() < 16384) continue;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && response.empty()) {
            return {false, "connected to " + where + ", then " + std::strerror(errno)};
        }
        break;
    }
    if (auto name = probeServerName(response); !name.empty())
        return {true, "answered by " + name + " (" + where + ", " + msSince(start) + ")"};
    if (response.empty()) return {true, "connected to " + where + ", closed without an answer (" + msSince(start) + ")"};
    return {true, "connected to " + where + ", answered '" + response.substr(0, response.find_first_of("\r\n")) + "' (" +
                      msSince(start) + ")"};
}

std::vector<uint8_t> icmpEchoRequest(bool v6, uint16_t id, uint16_t seq, const std::string& payload) {
    std::vector<uint8_t> p(8 + payload.size());
    p[0] = v6 ? 128 : 8;
    p[4] = static_cast<uint8_t>(id >> 8);
    p[5] = static_cast<uint8_t>(id);
    p[6] = static_cast<uint8_t>(seq >> 8);
    p[7] = static_cast<uint8_t>(seq);
    std::memcpy(p.data() + 8, payload.data(), payload.size());
    auto sum = internetChecksum(p.data(), p.size());
    p[2] = static_cast<uint8_t>(sum >> 8);
    p[3] = static_cast<uint8_t>(sum);
    return p;
}

bool isEchoReply(bool v6, bool withIpHeader, const uint8_t* packet, size_t len, uint16_t id, uint16_t seq, bool checkId) {
    size_t off = 0;
    if (withIpHeader) {
        if (len < 20 || (packet[0] >> 4) != 4) return false;
        off = static_cast<size_t>(packet[0] & 0x0f) * 4;
    }
    if (len < off + 8) return false;
    const uint8_t* icmp = packet + off;
    if (icmp[0] != (v6 ? 129 : 0) || icmp[1] != 0) return false;
    if (checkId && (icmp[4] << 8 | icmp[5]) != id) return false;
    return (icmp[6] << 8 | icmp[7]) == seq;
}

ProbeResult probePing(const ProbeTarget& t, std::chrono::milliseconds timeout) {
    auto start = Clock::now();
    auto deadline = start + timeout;
    bool v6 = false;
    isAddress(t.host, &v6);
    sockaddr_storage to{};
    socklen_t toLen = 0;
    if (v6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&to);
        a->sin6_family = AF_INET6;
        ::inet_pton(AF_INET6, t.host.c_str(), &a->sin6_addr);
        toLen = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&to);
        a->sin_family = AF_INET;
        ::inet_pton(AF_INET, t.host.c_str(), &a->sin_addr);
        toLen = sizeof *a;
    }
    // A ping socket where net.ipv4.ping_group_range allows it, else a raw
    // socket (CAP_NET_RAW, which container runtimes grant by default).
    int family = v6 ? AF_INET6 : AF_INET;
    int proto = v6 ? static_cast<int>(IPPROTO_ICMPV6) : static_cast<int>(IPPROTO_ICMP);
    bool raw = false;
    UniqueFd fd(::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, proto));
    if (!fd) {
        int dgramErr = errno;
        fd.reset(::socket(family, SOCK_RAW | SOCK_CLOEXEC, proto));
        if (!fd)
            return {false, fmt::format("cannot open an ICMP socket: {} (ping socket: {}); needs CAP_NET_RAW or "
                                       "net.ipv4.ping_group_range", std::strerror(errno), std::strerror(dgramErr))};
        raw = true;
    }
    auto id = static_cast<uint16_t>(::getpid());
    const uint16_t seq = 1;
    auto request = icmpEchoRequest(v6, id, seq, "kovs-probe");
    if (::sendto(fd.get(), request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&to), toLen) < 0) {
        int e = errno;
        if (e == EHOSTUNREACH || e == ENETUNREACH) return {false, t.host + " unreachable: " + std::strerror(e) + " (no route from here)"};
        return {false, "send an echo request to " + t.host + ": " + std::strerror(e)};
    }
    uint8_t buf[1500];
    for (;;) {
        if (!waitFor(fd.get(), POLLIN, deadline))
            return {false, "no echo reply from " + t.host + " in " + seconds(timeout) + " (dropped on the way, or the host does not answer)"};
        sockaddr_storage from{};
        socklen_t fromLen = sizeof from;
        auto n = ::recvfrom(fd.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &fromLen);
        if (n < 0) {
            if (errno == EINTR) continue;
            return {false, "no echo reply from " + t.host + ": " + std::strerror(errno)};
        }
        if (numericHost(reinterpret_cast<sockaddr*>(&from), fromLen) != numericHost(reinterpret_cast<sockaddr*>(&to), toLen)) continue;
        if (isEchoReply(v6, raw && !v6, buf, static_cast<size_t>(n), id, seq, raw))
            return {true, "echo reply from " + t.host + " in " + msSince(start)};
    }
}

std::string formatProbeLine(const ProbeTarget& t, const ProbeResult& r) {
    return fmt::format("  {:<4}  {:<14} {}", r.ok ? "ok" : "FAIL", t.name, r.detail);
}

std::string probeServerName(const std::string& response) {
    static const std::regex nameRe("(^|\n)kovs-probe ([A-Za-z0-9._-]{1,253})\r?\n");
    auto body = response.find("\r\n\r\n");
    std::smatch m;
    std::string text = body == std::string::npos ? response : response.substr(body + 4);
    return std::regex_search(text, m, nameRe) ? m[2].str() : "";
}

void serveProbes(uint16_t port) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) < 0) throwErrno("gethostname");
    std::signal(SIGPIPE, SIG_IGN);
    auto listenOn = [&](int family) {
        UniqueFd s(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!s) return s;
        int one = 1, zero = 0;
        ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_storage any{};
        socklen_t len = 0;
        if (family == AF_INET6) {
            ::setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            auto* a = reinterpret_cast<sockaddr_in6*>(&any);
            a->sin6_family = AF_INET6;
            a->sin6_port = htons(port);
            len = sizeof *a;
        } else {
            auto* a = reinterpret_cast<sockaddr_in*>(&any);
            a->sin_family = AF_INET;
            a->sin_port = htons(port);
            len = sizeof *a;
        }
        if (::bind(s.get(), reinterpret_cast<sockaddr*>(&any), len) < 0 || ::listen(s.get(), 128) < 0) s.reset();
        return s;
    };
    // Both families on one socket where the node has IPv6; IPv4 alone where it
    // is off (an IPv4-only kind cluster may disable it in pods).
    auto s = listenOn(AF_INET6);
    if (!s) s = listenOn(AF_INET);
    if (!s) throwErrno(fmt::format("listen on port {}", port));
    auto answer = fmt::format("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nkovs-probe {}\n", host);
    std::cout << fmt::format("kovsctl probe serve: answering on port {} as {}", port, host) << std::endl;
    for (;;) {
        UniqueFd c(::accept4(s.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!c) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE) {  // out of descriptors: wait, do not spin
                ::usleep(100 * 1000);
                continue;
            }
            throwErrno("accept");
        }
        // One connection at a time: a client that sends nothing holds the
        // others back at most 2 s.
        timeval tv{2, 0};
        ::setsockopt(c.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(c.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        std::string request;
        char buf[1024];
        while (request.find("\r\n\r\n") == std::string::npos && request.size() < 8192) {
            auto n = ::recv(c.get(), buf, sizeof buf, 0);
            if (n <= 0) break;
            request.append(buf, static_cast<size_t>(n));
        }
        [[maybe_unused]] auto sent = ::send(c.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
    }
}

}  // namespace kovs::ctl
