#!/usr/bin/env python3
"""The rules kube-proxy v1.31 writes on one node, from a small Service/Endpoints
description (kube_proxy/model.py says what it holds), for the local cluster of
tests/cluster: what kube-proxy would do there, so that kovs meets Services as
on kind. tests/cluster/lib/kube-proxy.sh applies the output inside a node.

  kube_proxy_rules.py iptables sync    --services F --node N --node-ip IP [--tcp-be-liberal] < iptables-save
  kube_proxy_rules.py iptables cleanup < iptables-save
  kube_proxy_rules.py nftables sync    --services F --node N --node-ip IP < nft list table ip kube-proxy
  kube_proxy_rules.py nftables cleanup < nft list tables
  kube_proxy_rules.py {iptables,nftables} sysctls
  kube_proxy_rules.py check --services F        validate only

and the same for kube-proxy's IPv6 proxier with --family ipv6 (default ipv4):

  kube_proxy_rules.py iptables sync    --family ipv6 --services F --node N [--tcp-be-liberal] < ip6tables-save
  kube_proxy_rules.py iptables cleanup --family ipv6 < ip6tables-save
  kube_proxy_rules.py nftables sync    --family ipv6 --services F --node N --node-ip IP6 < nft list table ip6 kube-proxy
  kube_proxy_rules.py nftables cleanup --family ipv6 < nft list tables
  kube_proxy_rules.py {iptables,nftables} sysctls --family ipv6
  kube_proxy_rules.py check --family ipv6 --services F

sync prints `iptables-restore --noflush` / `nft -f` input for one full sync
(standard input: the node's current state, for the jump rules that are already
there and the stale chains); cleanup prints what `kube-proxy --cleanup`
(CleanupLeftovers) does to its own rules, and nothing else's; sysctls prints
the key=value settings kube-proxy (as kind configures it) makes in the node's
network namespace. A bad description prints one error naming the object and
the field, and nothing on standard output.

Each run is for one family, as each of kube-proxy's proxiers is (a dual-stack
kube-proxy runs two; its --cleanup cleans both families): with ipv6 every
address of the description, and --node-ip, must be IPv6, the iptables output
is `ip6tables-restore --noflush` input, and the nftables output works on
`table ip6 kube-proxy`.
"""

import argparse
import json
import sys

sys.dont_write_bytecode = True          # no __pycache__ in the source tree
from kube_proxy import iptables, model, nftables  # noqa: E402


def _load(path, family):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise model.DescriptionError(f"cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise model.DescriptionError(f"not JSON: {e}") from None
    return model.parse(doc, family)


def main(argv):
    p = argparse.ArgumentParser(prog="kube_proxy_rules.py", description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["iptables", "nftables", "check"])
    p.add_argument("action", nargs="?", choices=["sync", "cleanup", "sysctls"])
    p.add_argument("--services", help="the Service/Endpoints description (JSON)")
    p.add_argument("--node", help="the node's name (endpoints[].node)")
    p.add_argument("--node-ip", help="the node's primary IP of the family (nftables NodePorts)")
    p.add_argument("--family", choices=model.FAMILIES, default="ipv4",
                   help="the IP family of kube-proxy's proxier (default ipv4): ipv6 for ip6tables / table ip6")
    p.add_argument("--tcp-be-liberal", action="store_true",
                   help="the node has net.netfilter.nf_conntrack_tcp_be_liberal=1 (iptables: no INVALID drop)")
    a = p.parse_args(argv)
    needs_desc = a.mode == "check" or a.action == "sync"
    if a.mode != "check" and not a.action:
        p.error(f"{a.mode}: give an action (sync, cleanup or sysctls)")
    if needs_desc and not a.services:
        p.error("--services is required")
    if a.action == "sync" and not a.node:
        p.error("sync needs --node")
    if a.action == "sync" and a.mode == "nftables":
        if not a.node_ip:
            p.error("nftables sync needs --node-ip")
        try:
            node_ip = model.parse_ip(a.node_ip, "--node-ip", a.family)
        except model.DescriptionError as e:
            p.error(str(e))
    try:
        desc = _load(a.services, a.family) if needs_desc else None
    except model.DescriptionError as e:
        print(f"kube_proxy_rules.py: {a.services}: {e}", file=sys.stderr)
        return 2
    if a.mode == "check":
        print(f"{a.services}: {len(desc.ports)} service ports", file=sys.stderr)
        return 0
    backend = iptables if a.mode == "iptables" else nftables
    if a.action == "sysctls":
        out = "".join(f"{s}\n" for s in backend.sysctls(a.family))
    elif a.action == "cleanup":
        state = sys.stdin.read()
        # iptables: the same restore for either family (ip6tables-save in, ip6tables-restore out).
        out = iptables.cleanup(iptables.Saved(state)) if a.mode == "iptables" else nftables.cleanup(state, a.family)
    elif a.mode == "iptables":
        out = iptables.sync(desc, a.node, a.tcp_be_liberal, iptables.Saved(sys.stdin.read()))
    else:
        out = nftables.sync(desc, a.node, node_ip, nftables.chains_in(sys.stdin.read()))
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
