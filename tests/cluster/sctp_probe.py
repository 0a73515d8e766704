#!/usr/bin/python3
"""SCTP packets where the kernel has no SCTP sockets (EPROTONOSUPPORT here):
crafted with Debian's python3-scapy (so /usr/bin/python3), for the
NetworkPolicy e2e test's SCTP rows.

  sctp_probe.py send  --dst IP --port N --count N     INIT chunks from this namespace (routed by the kernel)
  sctp_probe.py sniff --dev DEV --port N --seconds S  prints the source of every SCTP packet to port N seen
"""
import argparse
import ipaddress
import logging
import random

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import IP, IPv6, conf, send, sniff  # noqa: E402
from scapy.layers.sctp import SCTP, SCTPChunkInit  # noqa: E402


def main():
    a = argparse.ArgumentParser()
    a.add_argument("action", choices=["send", "sniff"])
    a.add_argument("--dst")
    a.add_argument("--dev", default="eth0")
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--count", type=int, default=3)
    a.add_argument("--seconds", type=float, default=5)
    o = a.parse_args()
    conf.verb = 0
    if o.action == "send":
        ip = IP(dst=o.dst) if ipaddress.ip_address(o.dst).version == 4 else IPv6(dst=o.dst)
        for _ in range(o.count):
            send(ip / SCTP(sport=random.randint(32768, 60999), dport=o.port, tag=0) /
                 SCTPChunkInit(init_tag=random.getrandbits(32), a_rwnd=65535, n_out_streams=1, n_in_streams=1,
                               init_tsn=random.getrandbits(32)))
        return
    seen = sniff(iface=o.dev, timeout=o.seconds, lfilter=lambda p: SCTP in p and p[SCTP].dport == o.port)
    for p in seen:
        print(p[IP].src if IP in p else p[IPv6].src, flush=True)


if __name__ == "__main__":
    main()
