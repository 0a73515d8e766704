#!/usr/bin/python3
"""Sends VXLAN packets with a forged outer source, as any container on the
kind Docker network can: VXLAN carries no proof of who sent it. Debian's
python3-scapy, so /usr/bin/python3 (another python3 on PATH may lack it).

  forge_vxlan.py --dev kind --dst-mac MAC --outer-src IP --outer-dst IP \
                 --inner-src IP --inner-dst IP --port N --count N --tag TEXT

Each packet is UDP to --inner-dst:--port with the payload TEXT, so a
receiver (tcpdump in the target pod) can tell the cases apart. Both families:
the outer and inner addresses may each be IPv4 or IPv6.
"""
import argparse
import ipaddress
import logging

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import IP, UDP, Ether, IPv6, Raw, sendp  # noqa: E402
from scapy.layers.vxlan import VXLAN  # noqa: E402


def ip_layer(src, dst):
    if ipaddress.ip_address(src).version != ipaddress.ip_address(dst).version:
        raise SystemExit(f"forge_vxlan: {src} and {dst} are of different families")
    return IP(src=src, dst=dst) if ipaddress.ip_address(src).version == 4 else IPv6(src=src, dst=dst)


def main():
    a = argparse.ArgumentParser()
    for flag in ("--dev", "--dst-mac", "--outer-src", "--outer-dst", "--inner-src", "--inner-dst", "--tag"):
        a.add_argument(flag, required=True)
    a.add_argument("--port", type=int, default=9999)
    a.add_argument("--count", type=int, default=3)
    a.add_argument("--vni", type=int, default=0)
    args = a.parse_args()
    if not 1 <= args.count <= 100:
        raise SystemExit("forge_vxlan: --count must be 1..100")
    inner = (Ether(src="0a:58:de:ad:be:ef", dst="0a:58:00:00:00:01")
             / ip_layer(args.inner_src, args.inner_dst)
             / UDP(sport=40000, dport=args.port) / Raw(args.tag.encode()))
    outer = (Ether(dst=args.dst_mac)
             / ip_layer(args.outer_src, args.outer_dst)
             / UDP(sport=49152, dport=4789) / VXLAN(vni=args.vni, flags=0x08) / inner)
    sendp(outer, iface=args.dev, count=args.count, inter=0.05, verbose=False)


if __name__ == "__main__":
    main()
