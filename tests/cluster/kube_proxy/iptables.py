"""What kube-proxy v1.31's iptables proxier (pkg/proxy/iptables/proxier.go)
writes on one node, as `iptables-restore --noflush` input, or for an IPv6
description as `ip6tables-restore --noflush` input (the IPv6 proxier).

One full sync of a kube-proxy that just started: its jump rules from the
built-in chains (EnsureRule, prepended, only when missing), the canary chains
of its iptables monitor, then one restore of every KUBE-* chain it owns
(declaring a chain flushes it), the per-Service chains, and the deletion of
Service chains no longer in use. Differences from the real proxier, none of
which changes a packet's fate: services come in description order instead of
Go's map order; no nfacct counters (`-m nfacct` needs nfnetlink_acct, and
kube-proxy leaves those matches out when it has none); the jump rules go in
the same restore instead of separate iptables calls.

The IPv6 proxier writes the same rules with IPv6 addresses, DNAT to
"[ip]:port", except for localhost NodePorts, which it never has (NewProxier:
localhostNodePorts only if nodePortAddresses contains 127.0.0.1, which an
IPv6 family's never does): no "block incoming localnet connections" rule (and
no KUBE-FIREWALL chain line in the restore: the chain exists only for the
kubelet jumps kube-proxy ensures, empty, since the kubelet creates it for IPv4
only), no route_localnet, and the KUBE-NODEPORTS jump excludes ::1/128.
"""

import re

from . import names

MARK = "0x4000"     # masqueradeBit 14, kube-proxy's default

# iptablesJumpChains, then iptablesKubeletJumpChains (kube-proxy's copy of
# kubelet's KUBE-FIREWALL), in the order kube-proxy ensures them.
_NEW = "-m conntrack --ctstate NEW"
JUMPS = [
    ("filter", "KUBE-EXTERNAL-SERVICES", "INPUT", "kubernetes externally-visible service portals", _NEW),
    ("filter", "KUBE-EXTERNAL-SERVICES", "FORWARD", "kubernetes externally-visible service portals", _NEW),
    ("filter", "KUBE-NODEPORTS", "INPUT", "kubernetes health check service ports", ""),
    ("filter", "KUBE-SERVICES", "FORWARD", "kubernetes service portals", _NEW),
    ("filter", "KUBE-SERVICES", "OUTPUT", "kubernetes service portals", _NEW),
    ("filter", "KUBE-FORWARD", "FORWARD", "kubernetes forwarding rules", ""),
    ("filter", "KUBE-PROXY-FIREWALL", "INPUT", "kubernetes load balancer firewall", _NEW),
    ("filter", "KUBE-PROXY-FIREWALL", "OUTPUT", "kubernetes load balancer firewall", _NEW),
    ("filter", "KUBE-PROXY-FIREWALL", "FORWARD", "kubernetes load balancer firewall", _NEW),
    ("nat", "KUBE-SERVICES", "OUTPUT", "kubernetes service portals", ""),
    ("nat", "KUBE-SERVICES", "PREROUTING", "kubernetes service portals", ""),
    ("nat", "KUBE-POSTROUTING", "POSTROUTING", "kubernetes postrouting rules", ""),
]
KUBELET_JUMPS = [
    ("filter", "KUBE-FIREWALL", "INPUT", "", ""),
    ("filter", "KUBE-FIREWALL", "OUTPUT", "", ""),
]
CANARY = "KUBE-PROXY-CANARY"
SERVICE_CHAIN_PREFIXES = ("KUBE-SVC-", "KUBE-SVL-", "KUBE-SEP-", "KUBE-FW-", "KUBE-EXT-")

_RULE = re.compile(r"^-A (\S+) (.*)$")
_COMMENT = re.compile(r'--comment (?:"((?:[^"\\]|\\.)*)"|(\S+))')
_TARGET = re.compile(r"-j (\S+)")


def _q(text):
    return f'"{text}"' if " " in text else text


def _jump_args(comment, extra, dst):
    args = [extra] if extra else []
    if comment:
        args.append(f"-m comment --comment {_q(comment)}")
    args.append(f"-j {dst}")
    return " ".join(args)


class Saved:
    """The parts of an `iptables-save` dump that a sync or a cleanup looks at."""

    def __init__(self, text):
        self.chains = {}            # table -> set of chain names
        self.rules = {}             # table -> list of (chain, target, comment)
        table = None
        for line in text.splitlines():
            if line.startswith("*"):
                table = line[1:].strip()
                self.chains.setdefault(table, set())
                self.rules.setdefault(table, [])
            elif table and line.startswith(":"):
                self.chains[table].add(line[1:].split()[0])
            elif table and (m := _RULE.match(line)):
                t = _TARGET.search(m.group(2))
                c = _COMMENT.search(m.group(2))
                comment = (c.group(1) if c.group(1) is not None else c.group(2)) if c else ""
                self.rules[table].append((m.group(1), t.group(1) if t else "", comment))

    def has_jump(self, table, src, dst, comment):
        return (src, dst, comment) in self.rules.get(table, [])

    def has_chain(self, table, chain):
        return chain in self.chains.get(table, set())


def sync(desc, node, tcp_be_liberal, saved):
    """The restore input of one full sync for `node` (of desc.family)."""
    ipv6 = desc.family == "ipv6"
    filter_chains = ["KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS",
                     "KUBE-PROXY-FIREWALL", CANARY]
    # kube-proxy declares KUBE-FIREWALL (flushing it) only for the IPv4 rule
    # below; for IPv6 it only EnsureChain()s it for the kubelet jumps, which
    # creates it when missing and leaves it alone otherwise.
    if not ipv6 or not saved.has_chain("filter", "KUBE-FIREWALL"):
        filter_chains.append("KUBE-FIREWALL")
    nat_chains = ["KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", CANARY]
    jumps = {"filter": [], "nat": []}
    for table, dst, src, comment, extra in JUMPS + KUBELET_JUMPS:
        if not saved.has_jump(table, src, dst, comment):
            jumps[table].append(f"-I {src} 1 {_jump_args(comment, extra, dst)}")
    filt, nat = [], []
    nat += [
        f"-A KUBE-POSTROUTING -m mark ! --mark {MARK}/{MARK} -j RETURN",
        f"-A KUBE-POSTROUTING -j MARK --xor-mark {MARK}",
        '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully',
        f"-A KUBE-MARK-MASQ -j MARK --or-mark {MARK}",
    ]
    # localhostNodePorts (the default; kind keeps it) sets route_localnet,
    # and this rule closes the hole that opens (issue 90259). IPv4 only
    # (`if !isIPv6 && proxier.localhostNodePorts`).
    if not ipv6:
        filt.append('-A KUBE-FIREWALL -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 '
                    "! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP")
    active = set()
    for sp in desc.ports:
        _service(sp, node, desc.cluster_cidr, filt, nat, nat_chains, active)
    for chain in sorted(saved.chains.get("nat", set()) - active):
        if chain.startswith(SERVICE_CHAIN_PREFIXES):
            nat_chains.append(chain)        # declared: flushed, then deleted
            nat.append(f"-X {chain}")
    # nodePortAddresses empty (kind's default): every local address, and
    # for IPv4 localhost too since localhostNodePorts is on; IPv6 localhost
    # NodePorts never work, so ::1 is left out.
    localhost = " ! -d ::1/128" if ipv6 else ""
    nat.append('-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the '
               f'last rule in this chain" -m addrtype --dst-type LOCAL{localhost} -j KUBE-NODEPORTS')
    if not tcp_be_liberal:
        filt.append("-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP")
    filt.append(f'-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark {MARK}/{MARK} -j ACCEPT')
    filt.append('-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" '
                "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT")
    out = ["*mangle", f":{CANARY} - [0:0]", "COMMIT"]
    out += _table("filter", filter_chains, jumps["filter"], filt)
    out += _table("nat", nat_chains, jumps["nat"], nat)
    return "\n".join(out) + "\n"


def _table(name, chains, jumps, rules):
    return [f"*{name}"] + [f":{c} - [0:0]" for c in chains] + jumps + rules + ["COMMIT"]


def _service(sp, node, cluster_cidr, filt, nat, nat_chains, active):
    proto, name = sp.protocol, sp.name()
    cluster_eps, local_eps, reachable, has_eps = sp.categorize(node)
    svc_chain = names.iptables_chain("KUBE-SVC-", name, proto)
    svl_chain = names.iptables_chain("KUBE-SVL-", name, proto)
    ext_chain = names.iptables_chain("KUBE-EXT-", name, proto)
    has_external = has_eps and (not sp.external_local or bool(local_eps))
    match = f"-m {proto} -p {proto}"
    cluster_ip = f'-m comment --comment "{name} cluster IP" {match} -d {sp.cluster_ip} --dport {sp.port}'
    if has_eps:
        nat.append(f"-A KUBE-SERVICES {cluster_ip} -j {svc_chain}")
    else:
        filt.append(f'-A KUBE-SERVICES -m comment --comment "{name} has no endpoints" {match} '
                    f"-d {sp.cluster_ip} --dport {sp.port} -j REJECT")
    if sp.node_port:
        if has_eps:
            nat.append(f"-A KUBE-NODEPORTS -m comment --comment {name} {match} --dport {sp.node_port} -j {ext_chain}")
        if not has_external:
            why = "has no endpoints" if not has_eps else "has no local endpoints"
            target = "REJECT" if not has_eps else "DROP"
            filt.append(f'-A KUBE-EXTERNAL-SERVICES -m comment --comment "{name} {why}" -m addrtype --dst-type LOCAL '
                        f"{match} --dport {sp.node_port} -j {target}")
    if not has_eps:
        return
    # Off-cluster sources to a ClusterIP are masqueraded (kind: detectLocalMode ClusterCIDR).
    nat.append(f"-A {svc_chain} {cluster_ip} ! -s {cluster_cidr} -j KUBE-MARK-MASQ")
    if sp.node_port:
        nat_chains.append(ext_chain)
        active.add(ext_chain)
        if not sp.external_local:
            nat.append(f'-A {ext_chain} -m comment --comment "masquerade traffic for {name} external destinations" '
                       "-j KUBE-MARK-MASQ")
        else:
            nat.append(f'-A {ext_chain} -m comment --comment "pod traffic for {name} external destinations" '
                       f"-s {cluster_cidr} -j {svc_chain}")
            nat.append(f'-A {ext_chain} -m comment --comment "masquerade LOCAL traffic for {name} external '
                       'destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ')
            nat.append(f'-A {ext_chain} -m comment --comment "route LOCAL traffic for {name} external '
                       f'destinations" -m addrtype --src-type LOCAL -j {svc_chain}')
        if has_external:
            nat.append(f"-A {ext_chain} -j {svl_chain if sp.external_local else svc_chain}")
    nat_chains.append(svc_chain)
    active.add(svc_chain)
    _to_endpoints(nat, name, proto, svc_chain, cluster_eps)
    if sp.external_local and local_eps:
        nat_chains.append(svl_chain)
        active.add(svl_chain)
        _to_endpoints(nat, name, proto, svl_chain, local_eps)
    for ep in reachable:
        sep = names.iptables_endpoint_chain(name, proto, ep.address())
        nat_chains.append(sep)
        active.add(sep)
        nat.append(f"-A {sep} -m comment --comment {name} -s {ep.ip} -j KUBE-MARK-MASQ")
        nat.append(f"-A {sep} -m comment --comment {name} {match} -j DNAT --to-destination {ep.address()}")


def _to_endpoints(nat, name, proto, chain, endpoints):
    n = len(endpoints)
    for i, ep in enumerate(endpoints):
        sep = names.iptables_endpoint_chain(name, proto, ep.address())
        rule = f'-A {chain} -m comment --comment "{name} -> {ep.address()}"'
        if i < n - 1:
            rule += f" -m statistic --mode random --probability {1.0 / (n - i):0.10f}"
        nat.append(f"{rule} -j {sep}")


def cleanup(saved):
    """What CleanupLeftovers (kube-proxy --cleanup) restores: its jump rules
    out of the built-in chains, then its chains flushed and deleted. The
    kubelet's KUBE-FIREWALL, KUBE-MARK-MASQ and the canaries stay, as there.
    The same for either family: from ip6tables-save, for ip6tables-restore,
    it is the IPv6 half (kube-proxy --cleanup runs it for both)."""
    out = []
    tables = {
        "nat": ["KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING"],
        "filter": ["KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS"],
    }
    for table, own in tables.items():
        deletes = [f"-D {src} {_jump_args(comment, extra, dst)}" for t, dst, src, comment, extra in JUMPS
                   if t == table and saved.has_jump(table, src, dst, comment)]
        chains = [c for c in own if saved.has_chain(table, c)]
        if table == "nat":
            chains += sorted(c for c in saved.chains.get("nat", set()) if c.startswith(SERVICE_CHAIN_PREFIXES))
        if deletes or chains:
            out += [f"*{table}"] + [f":{c} - [0:0]" for c in chains] + deletes + [f"-X {c}" for c in chains] + ["COMMIT"]
    return "\n".join(out) + ("\n" if out else "")


def sysctls(family="ipv4"):
    # route_localnet for NodePorts on 127.0.0.1 (localhostNodePorts; not for
    # the IPv6 proxier, which has none); the conntrack timeouts are
    # kube-proxy's defaults, which kind keeps (it only skips
    # nf_conntrack_max, a global one), set whatever the family.
    localnet = ["net.ipv4.conf.all.route_localnet=1"] if family == "ipv4" else []
    return localnet + ["net.netfilter.nf_conntrack_tcp_timeout_established=86400",
                       "net.netfilter.nf_conntrack_tcp_timeout_close_wait=3600"]
