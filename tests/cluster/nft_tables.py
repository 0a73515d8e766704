#!/usr/bin/env python3
"""Lists the nftables tables of this network namespace, one "FAMILY NAME" a
line (as `nft list tables` prints them, without the word "table"), straight
from netlink (NFT_MSG_GETTABLE dump), for nodes that have no nft binary (the
kind-node provider's): `in_node N python3 - < nft_tables.py`. Exits 1 with
the errno when the kernel refuses the dump."""

import os
import socket
import struct
import sys

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_GETTABLE = 1
NFTA_TABLE_NAME = 1
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
FAMILIES = {1: "inet", 2: "ip", 3: "arp", 5: "netdev", 7: "bridge", 10: "ip6"}


def main():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    msg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE
    nfgen = struct.pack("BBH", socket.AF_UNSPEC, 0, 0)
    s.send(struct.pack("=IHHII", 16 + len(nfgen), msg_type, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + nfgen)
    while True:
        data = s.recv(65536)
        at = 0
        while at + 16 <= len(data):
            length, kind, _, _, _ = struct.unpack_from("=IHHII", data, at)
            if kind == NLMSG_DONE:
                return 0
            if kind == NLMSG_ERROR:
                err = -struct.unpack_from("=i", data, at + 16)[0]
                if err == 0:
                    return 0
                print(f"nft_tables.py: the table dump failed: {os.strerror(err)}", file=sys.stderr)
                return 1
            family = data[at + 16]
            attr = at + 20
            while attr + 4 <= at + length:
                alen, atype = struct.unpack_from("=HH", data, attr)
                if alen < 4:
                    break
                if atype & 0x7fff == NFTA_TABLE_NAME:
                    name = data[attr + 4:attr + alen].split(b"\0", 1)[0].decode()
                    print(FAMILIES.get(family, str(family)), name)
                attr += (alen + 3) & ~3
            at += (length + 3) & ~3


if __name__ == "__main__":
    sys.exit(main())
