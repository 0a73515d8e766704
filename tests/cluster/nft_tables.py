#!/usr/bin/env python3
"""Lists the nftables tables of this network namespace, one "FAMILY NAME" a
line (as `nft list tables` prints them, without the word "table"), straight
from netlink (NFT_MSG_GETTABLE dump), for nodes that have no nft binary (the
kind-node provider's): `in_node N python3 - < nft_tables.py`. With arguments
`delete FAMILY NAME` it deletes that table instead, as `nft delete table`
does (NFT_MSG_DELTABLE in a batch). Exits 1 with the errno when the kernel
refuses."""

import os
import socket
import struct
import sys

NETLINK_NETFILTER = 12
NFNL_SUBSYS_NFTABLES = 10
NFT_MSG_GETTABLE = 1
NFT_MSG_DELTABLE = 2
NFNL_MSG_BATCH_BEGIN, NFNL_MSG_BATCH_END = 16, 17
NLM_F_ACK = 0x4
NFTA_TABLE_NAME = 1
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
FAMILIES = {1: "inet", 2: "ip", 3: "arp", 5: "netdev", 7: "bridge", 10: "ip6"}


def delete(family, name):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    number = {v: k for k, v in FAMILIES.items()}[family]
    attr = name.encode() + b"\0"
    attr = struct.pack("=HH", 4 + len(attr), NFTA_TABLE_NAME) + attr + b"\0" * (-len(attr) % 4)

    def message(kind, flags, seq, family_byte, res_id, payload=b""):
        body = struct.pack("BBH", family_byte, 0, socket.htons(res_id)) + payload
        return struct.pack("=IHHII", 16 + len(body), kind, flags, seq, 0) + body

    s.send(message(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, 1, socket.AF_UNSPEC, NFNL_SUBSYS_NFTABLES)
           + message((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELTABLE, NLM_F_REQUEST | NLM_F_ACK, 2, number, 0, attr)
           + message(NFNL_MSG_BATCH_END, NLM_F_REQUEST, 3, socket.AF_UNSPEC, NFNL_SUBSYS_NFTABLES))
    data = s.recv(65536)
    length, kind, _, _, _ = struct.unpack_from("=IHHII", data, 0)
    err = -struct.unpack_from("=i", data, 16)[0] if kind == NLMSG_ERROR else 0
    if err:
        print(f"nft_tables.py: delete table {family} {name}: {os.strerror(err)}", file=sys.stderr)
        return 1
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "delete" and sys.argv[2] in FAMILIES.values():
        return delete(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 1:
        print("usage: nft_tables.py [delete FAMILY NAME]", file=sys.stderr)
        return 2
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
