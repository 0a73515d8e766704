#pragma once
// kovsctl probe: the smoke test's two ends, shipped in the kovs image so that
// the same code runs in a pod on a real kind cluster (kubectl exec) and in the
// test bed. `serve` answers HTTP on one port with "kovs-probe <hostname>";
// `check` tries each target once (TCP connect + GET, or an ICMP echo) and
// prints one line a target: ok or FAIL, its name, and what it saw or a plain
// reason.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace kovs::ctl {

struct ProbeTarget {
    enum class Kind { Tcp, Ping };
    std::string name;  // the row it reports as: [a-z0-9][a-z0-9./_-]*, at most 63
    Kind kind = Kind::Tcp;
    std::string host;   // an IPv4 or IPv6 address, or a DNS name (tcp only)
    uint16_t port = 0;  // tcp only
};

// "NAME=tcp:HOST:PORT" (IPv6 in brackets: tcp:[fd00::1]:80) or
// "NAME=ping:ADDRESS"; throws kovs::Error naming what is wrong.
ProbeTarget parseProbeTarget(const std::string& spec);

struct ProbeResult {
    bool ok = false;
    std::string detail;  // what it saw, or why it failed, in plain words
};

ProbeResult probeTcp(const ProbeTarget& t, std::chrono::milliseconds timeout);
ProbeResult probePing(const ProbeTarget& t, std::chrono::milliseconds timeout);
inline ProbeResult probe(const ProbeTarget& t, std::chrono::milliseconds timeout) {
    return t.kind == ProbeTarget::Kind::Tcp ? probeTcp(t, timeout) : probePing(t, timeout);
}

// "  ok    NAME  detail" / "  FAIL  NAME  detail": the shape of kovsctl
// doctor's lines, so one table (kind/node-table.awk) reads both.
std::string formatProbeLine(const ProbeTarget& t, const ProbeResult& r);

// What serve answers: the hostname after "kovs-probe ", from an HTTP body.
// Empty when the body is not a probe server's.
std::string probeServerName(const std::string& response);

// ICMP echo (v4 or v6) with this id, sequence and payload, checksum filled in
// (the kernel recomputes it for ICMPv6 and for ping sockets).
std::vector<uint8_t> icmpEchoRequest(bool v6, uint16_t id, uint16_t seq, const std::string& payload);
// Whether `packet` (as a raw IPv4 socket delivers it, IP header first; or as
// a ping or raw ICMPv6 socket delivers it, ICMP first) is the echo reply to
// id/seq. A ping socket rewrites the id to its own, so `checkId` is false there.
bool isEchoReply(bool v6, bool withIpHeader, const uint8_t* packet, size_t len, uint16_t id, uint16_t seq, bool checkId);

// Serves until killed: every connection gets one HTTP/1.0 answer,
// "kovs-probe <hostname>\n", after its request (or 2 s). Both families when
// the node has IPv6, else IPv4 only. Throws when the port cannot be bound.
[[noreturn]] void serveProbes(uint16_t port);

}  // namespace kovs::ctl
