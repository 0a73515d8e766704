#!/usr/bin/env python3
"""Servers that say who connected, and the client that asks them: the Services
e2e asserts source addresses (egress masqueraded to the node IP, pod -> pod and
ClusterIP -> pod keeping the pod IP) instead of assuming them.

  whoami.py serve --name NAME --bind IP [--bind IP]... [--tcp PORT]... [--udp PORT]...
      Answers each TCP connection (after the client's request line) and each
      UDP datagram with one line "NAME PEER_IP:PEER_PORT": the peer as this
      socket saw it. Each port is served on every --bind address (IPv4 or
      IPv6). UDP replies leave from the bound address, so a server on
      a node with several addresses answers from the one that was asked
      (conntrack can only un-NAT a reply that comes from the DNAT target).
  whoami.py probe --proto tcp|udp --to IP:PORT [--count N] [--timeout S] [--max-failures K]
      (an IPv6 address in brackets: [fd00:10:96::b]:80) N requests, one
      result line each:
        ok NAME PEER_IP REPLY_FROM     (REPLY_FROM: the datagram's source; TCP: the peer)
        timeout - - -                  no answer within S seconds
        wrong-source NAME PEER_IP REPLY_FROM   UDP answer from another address than asked
        error - - - REASON             refused, unreachable, reset, short answer
      and stops after K failures (a broken path costs K timeouts, not N).
Exit status 0 whatever the results; the caller judges them.
"""

import argparse
import socket
import sys
import threading


def _serve_tcp(name, srv):
    while True:
        conn, peer = srv.accept()
        threading.Thread(target=_answer_tcp, args=(conn, name, peer), daemon=True).start()


def _answer_tcp(conn, name, peer):
    with conn:
        conn.settimeout(5)
        try:
            data = b""
            while b"\n" not in data and len(data) < 4096:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            conn.sendall(f"{name} {peer[0]}:{peer[1]}\n".encode())
        except OSError as e:
            print(f"{name}: tcp {peer[0]}:{peer[1]}: {e}", file=sys.stderr, flush=True)


def _serve_udp(name, srv):
    while True:
        _, peer = srv.recvfrom(4096)
        try:
            srv.sendto(f"{name} {peer[0]}:{peer[1]}\n".encode(), peer)
        except OSError as e:
            print(f"{name}: udp {peer[0]}:{peer[1]}: {e}", file=sys.stderr, flush=True)


def _family(ip):
    return socket.AF_INET6 if ":" in ip else socket.AF_INET


def _endpoint(ip, port):
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def serve(a):
    threads = []
    for ip in a.bind:                         # every socket bound before any answers: a bad port fails the start
        try:
            for port in a.tcp:
                srv = socket.socket(_family(ip), socket.SOCK_STREAM)
                srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                srv.bind((ip, port))
                srv.listen(128)
                threads.append(threading.Thread(target=_serve_tcp, args=(a.name, srv), daemon=True))
            for port in a.udp:
                srv = socket.socket(_family(ip), socket.SOCK_DGRAM)
                srv.bind((ip, port))
                threads.append(threading.Thread(target=_serve_udp, args=(a.name, srv), daemon=True))
        except OSError as e:
            print(f"{a.name}: cannot listen on {ip}: {e}", file=sys.stderr)
            return 1
    for t in threads:
        t.start()
    print(f"{a.name}: serving on {a.bind} tcp {a.tcp} udp {a.udp}", file=sys.stderr, flush=True)
    for t in threads:
        t.join()
    return 1


def _parse_answer(data):
    words = data.decode(errors="replace").split()
    if len(words) != 2 or ":" not in words[1]:
        return None
    return words[0], words[1].rsplit(":", 1)[0]


def _probe_tcp(ip, port, timeout):
    try:
        with socket.create_connection((ip, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"whoami\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
    except socket.timeout:
        return "timeout - - -"
    except OSError as e:
        return f"error - - - {e.strerror or e}".replace("\n", " ")
    answer = _parse_answer(data)
    if not answer:
        return f"error - - - answer {data[:60]!r}" if data else "error - - - connection closed without an answer"
    return f"ok {answer[0]} {answer[1]} {_endpoint(ip, port)}"


def _probe_udp(ip, port, timeout):
    # Not connected: a reply from an unexpected source (a failed un-NAT) is
    # received and reported instead of being dropped by the kernel.
    with socket.socket(_family(ip), socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        try:
            s.sendto(b"whoami\n", (ip, port))
            data, src = s.recvfrom(4096)
            src = src[:2]                     # IPv6: (ip, port, flowinfo, scope id)
        except socket.timeout:
            return "timeout - - -"
        except OSError as e:
            return f"error - - - {e.strerror or e}"
    answer = _parse_answer(data)
    if not answer:
        return f"error - - - answer {data[:60]!r} from {_endpoint(*src)}"
    status = "ok" if src == (ip, port) else "wrong-source"
    return f"{status} {answer[0]} {answer[1]} {_endpoint(*src)}"


def probe(a):
    ip, _, port = a.to.rpartition(":")
    ip = ip.removeprefix("[").removesuffix("]")
    probe_one = _probe_tcp if a.proto == "tcp" else _probe_udp
    failures = 0
    for _ in range(a.count):
        line = probe_one(ip, int(port), a.timeout)
        print(line, flush=True)
        if not line.startswith("ok "):
            failures += 1
            if failures >= a.max_failures:
                break
    return 0


def main(argv):
    p = argparse.ArgumentParser(prog="whoami.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--name", required=True)
    s.add_argument("--bind", required=True, action="append")
    s.add_argument("--tcp", type=int, action="append", default=[])
    s.add_argument("--udp", type=int, action="append", default=[])
    c = sub.add_parser("probe")
    c.add_argument("--proto", choices=["tcp", "udp"], required=True)
    c.add_argument("--to", required=True, help="IP:PORT")
    c.add_argument("--count", type=int, default=1)
    c.add_argument("--timeout", type=float, default=2.0)
    c.add_argument("--max-failures", type=int, default=1)
    a = p.parse_args(argv)
    if a.cmd == "serve" and not (a.tcp or a.udp):
        p.error("serve: give at least one --tcp or --udp port")
    return serve(a) if a.cmd == "serve" else probe(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
