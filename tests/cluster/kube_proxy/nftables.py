"""What kube-proxy v1.31's nftables proxier (pkg/proxy/nftables/proxier.go)
writes on one node, as `nft -f` input: the one transaction of a full sync by
a kube-proxy that just started (setupNFTables, then every Service).

Everything lives in `table ip kube-proxy`, or for an IPv6 description in
`table ip6 kube-proxy` (the IPv6 proxier: knftables.IPv6Family), where the
rules match `ip6 daddr`/`ip6 saddr`, the sets and maps are keyed by
ipv6_addr, dnat goes to "[ip]:port" and the endpoint chain names write the
address's colons as dots; nothing else differs. Differences from the real proxier,
none of which changes a packet's fate: services come in description order;
stale Service chains are flushed and deleted in the same transaction (kube-proxy
deletes them a second later, for kernels before 6.2); base chain priorities
are written as numbers (dstnat-10 = -110, dstnat+10 = -90).

Stale Service chains are flushed in the sync that finds them unused and
deleted by a later one, as kube-proxy does (with kernels before 6.2 a chain
still referenced from a map element flushed in the same transaction cannot be
deleted; here deleting a chain that an anonymous vmap of a chain flushed in
the same transaction points to fails with EBUSY even on 6.18). kube-proxy
waits a second of wall time; this generator deletes a stale chain once a
previous sync has emptied it.
"""

from . import names

# Per family: the table (knftables.IPv4Family / IPv6Family), the address
# match (setupNFTables' and syncProxyRules' ipX) and the address type of the
# sets and maps (ipvX_addr).
TABLES = {"ipv4": "ip kube-proxy", "ipv6": "ip6 kube-proxy"}
_IP = {"ipv4": "ip", "ipv6": "ip6"}
_ADDR = {"ipv4": "ipv4_addr", "ipv6": "ipv6_addr"}
MARK = "0x4000"

# nftablesBaseChains: name, type, hook, priority.
BASE_CHAINS = [
    ("filter-prerouting", "filter", "prerouting", -110),
    ("filter-input", "filter", "input", -110),
    ("filter-forward", "filter", "forward", -110),
    ("filter-output", "filter", "output", -110),
    ("filter-output-post-dnat", "filter", "output", -90),
    ("nat-prerouting", "nat", "prerouting", -100),
    ("nat-output", "nat", "output", -100),
    ("nat-postrouting", "nat", "postrouting", 100),
]
# nftablesJumpChains: destination, source, match.
JUMP_CHAINS = [
    ("nodeport-endpoints-check", "filter-input", "ct state new"),
    ("service-endpoints-check", "filter-input", "ct state new"),
    ("service-endpoints-check", "filter-forward", "ct state new"),
    ("service-endpoints-check", "filter-output", "ct state new"),
    ("firewall-check", "filter-prerouting", "ct state new"),
    ("firewall-check", "filter-output", "ct state new"),
    ("services", "nat-output", ""),
    ("services", "nat-prerouting", ""),
    ("masquerading", "nat-postrouting", ""),
    ("cluster-ips-check", "filter-forward", "ct state new"),
    ("cluster-ips-check", "filter-output-post-dnat", "ct state new"),
]
CONTAINERS = [("set", "cluster-ips"), ("map", "service-ips"), ("map", "firewall-ips"),
              ("map", "no-endpoint-services"), ("map", "no-endpoint-nodeports"), ("map", "service-nodeports")]


class Tx:
    def __init__(self, family):
        self.lines = []
        self.chains = set()
        self.table, self.ip, self.addr = TABLES[family], _IP[family], _ADDR[family]

    def add(self, text):
        self.lines.append(f"add {text}")

    def rule(self, chain, rule, comment=None):
        self.add(f"rule {self.table} {chain} {rule}" + (f' comment "{comment}"' if comment else ""))

    def ensure_chain(self, chain):            # ensureChain: add + flush, once per transaction
        if chain in self.chains:
            return
        self.chains.add(chain)
        self.add(f"chain {self.table} {chain}")
        self.lines.append(f"flush chain {self.table} {chain}")


def _setup(tx, node_ip, service_cidrs):
    table, ip, addr = tx.table, tx.ip, tx.addr
    tx.add(f'table {table} {{ comment "rules for kube-proxy" ; }}')
    # The first sync of a kube-proxy process deletes the base chains once, so
    # that a changed priority can be applied (flushed == false).
    for name, _, _, _ in BASE_CHAINS:
        tx.add(f"chain {table} {name}")
        tx.lines.append(f"delete chain {table} {name}")
    for name, kind, hook, prio in BASE_CHAINS:
        tx.add(f"chain {table} {name} {{ type {kind} hook {hook} priority {prio} ; }}")
        tx.lines.append(f"flush chain {table} {name}")
    for dst, src, match in JUMP_CHAINS:
        tx.ensure_chain(dst)
        tx.rule(src, f"{match} jump {dst}".strip())
    for chain in ("services", "cluster-ips-check", "masquerading", "mark-for-masquerade"):
        tx.ensure_chain(chain)
    tx.rule("mark-for-masquerade", f"mark set mark or {MARK}")
    tx.rule("masquerading", f"mark and {MARK} == 0 return")
    tx.rule("masquerading", f"mark set mark xor {MARK}")
    tx.rule("masquerading", "masquerade fully-random")
    tx.add(f'set {table} cluster-ips {{ type {addr} ; comment "Active ClusterIPs" ; }}')
    tx.rule("cluster-ips-check", f"{ip} daddr @cluster-ips reject", "Reject traffic to invalid ports of ClusterIPs")
    if service_cidrs:
        tx.rule("cluster-ips-check", f"{ip} daddr {{ {', '.join(service_cidrs)} }} drop",
                "Drop traffic to unallocated ClusterIPs")
    # nftables mode defaults nodePortAddresses to the node's primary IP (of
    # the proxier's family).
    tx.add(f'set {table} nodeport-ips {{ type {addr} ; comment "IPs that accept NodePort traffic" ; }}')
    tx.lines.append(f"flush set {table} nodeport-ips")
    tx.add(f"element {table} nodeport-ips {{ {node_ip} }}")
    tx.add(f"map {table} no-endpoint-services {{ type {addr} . inet_proto . inet_service : verdict ; "
           'comment "vmap to drop or reject packets to services with no endpoints" ; }')
    tx.add(f"map {table} no-endpoint-nodeports {{ type inet_proto . inet_service : verdict ; "
           'comment "vmap to drop or reject packets to service nodeports with no endpoints" ; }')
    tx.add(f'chain {table} reject-chain {{ comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ; }}')
    tx.lines.append(f"flush chain {table} reject-chain")
    tx.rule("reject-chain", "reject")
    tx.rule("service-endpoints-check", f"{ip} daddr . meta l4proto . th dport vmap @no-endpoint-services")
    tx.rule("nodeport-endpoints-check", f"{ip} daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports")
    tx.add(f"map {table} firewall-ips {{ type {addr} . inet_proto . inet_service : verdict ; "
           'comment "destinations that are subject to LoadBalancerSourceRanges" ; }')
    tx.ensure_chain("firewall-check")
    tx.rule("firewall-check", f"{ip} daddr . meta l4proto . th dport vmap @firewall-ips")
    tx.add(f"map {table} service-ips {{ type {addr} . inet_proto . inet_service : verdict ; "
           'comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; }')
    tx.add(f'map {table} service-nodeports {{ type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }}')
    tx.rule("services", f"{ip} daddr . meta l4proto . th dport vmap @service-ips")
    tx.rule("services", f"{ip} daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports")
    for kind, name in CONTAINERS:
        tx.lines.append(f"flush {kind} {table} {name}")


def sync(desc, node, node_ip, existing_chains):
    """The `nft -f` input of one full sync for `node` (of desc.family, as
    node_ip); existing_chains maps the chains of the family's kube-proxy
    table now to whether they hold rules."""
    tx = Tx(desc.family)
    _setup(tx, node_ip, desc.service_cidrs)
    active = set()
    for sp in desc.ports:
        _service(tx, sp, node, desc.cluster_cidr, active)
    for chain in sorted(set(existing_chains) - active):
        if "/" not in chain:                   # isServiceChainName
            continue
        if existing_chains[chain]:
            tx.lines.append(f"flush chain {tx.table} {chain}")
        else:
            tx.lines.append(f"delete chain {tx.table} {chain}")
    return "\n".join(tx.lines) + "\n"


def _service(tx, sp, node, cluster_cidr, active):
    table, ip = tx.table, tx.ip
    proto, name = sp.protocol, sp.name()
    cluster_eps, local_eps, reachable, has_eps = sp.categorize(node)
    base = names.nft_service_base(sp.namespace, sp.service, proto, sp.port_name)
    svc_chain, local_chain, ext_chain = f"service-{base}", f"local-{base}", f"external-{base}"

    def ep_chain(ep):
        return "endpoint-" + names.nft_endpoint_base(sp.namespace, sp.service, proto, sp.port_name, ep.ip, ep.port)

    for ep in reachable:
        tx.ensure_chain(ep_chain(ep))
        active.add(ep_chain(ep))
    uses_local = sp.external_local and bool(local_eps)
    for chain, used in ((svc_chain, bool(cluster_eps)), (local_chain, uses_local),
                        (ext_chain, has_eps and bool(sp.node_port))):
        if used:
            tx.ensure_chain(chain)
            active.add(chain)
    has_external = has_eps and (not sp.external_local or bool(local_eps))
    tx.add(f"element {table} cluster-ips {{ {sp.cluster_ip} }}")
    if has_eps:
        tx.add(f"element {table} service-ips {{ {sp.cluster_ip} . {proto} . {sp.port} : goto {svc_chain} }}")
    else:
        tx.add(f'element {table} no-endpoint-services {{ {sp.cluster_ip} . {proto} . {sp.port} comment "{name}" '
               ": goto reject-chain }")
    if sp.node_port:
        if has_eps:
            tx.add(f"element {table} service-nodeports {{ {proto} . {sp.node_port} : goto {ext_chain} }}")
        if not has_external:
            verdict = "goto reject-chain" if not has_eps else "drop"
            tx.add(f'element {table} no-endpoint-nodeports {{ {proto} . {sp.node_port} comment "{name}" : {verdict} }}')
    if not has_eps:
        return
    tx.rule(svc_chain, f"{ip} daddr {sp.cluster_ip} {proto} dport {sp.port} {ip} saddr != {cluster_cidr} "
                       "jump mark-for-masquerade")
    if sp.node_port:
        if not sp.external_local:
            tx.rule(ext_chain, "jump mark-for-masquerade")
        else:
            tx.rule(ext_chain, f"{ip} saddr {cluster_cidr} goto {svc_chain}", "short-circuit pod traffic")
            tx.rule(ext_chain, "fib saddr type local jump mark-for-masquerade", "masquerade local traffic")
            tx.rule(ext_chain, f"fib saddr type local goto {svc_chain}", "short-circuit local traffic")
        if has_external:
            tx.rule(ext_chain, f"goto {local_chain if sp.external_local else svc_chain}")
    _to_endpoints(tx, svc_chain, cluster_eps, ep_chain)
    if uses_local:
        _to_endpoints(tx, local_chain, local_eps, ep_chain)
    for ep in reachable:
        tx.rule(ep_chain(ep), f"{ip} saddr {ep.ip} jump mark-for-masquerade")
        tx.rule(ep_chain(ep), f"meta l4proto {proto} dnat to {ep.address()}")   # "[ip]:port" for IPv6


def _to_endpoints(tx, chain, endpoints, ep_chain):
    elements = " , ".join(f"{i} : goto {ep_chain(ep)}" for i, ep in enumerate(endpoints))
    tx.rule(chain, f"numgen random mod {len(endpoints)} vmap {{ {elements} }}")


def chains_in(listing):
    """The chains in `nft list table ip[6] kube-proxy` output -> whether they hold rules."""
    out, chain = {}, None
    for line in listing.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "chain":
            chain = words[1].strip('"')
            out[chain] = False
        elif chain and words == ["}"]:
            chain = None
        elif chain and words and words[0] not in ("type", "comment", "policy"):
            out[chain] = True
    return out


def cleanup(tables_listing, family="ipv4"):
    """CleanupLeftovers: the whole table goes (only if it is there). It
    deletes both families' tables; this is one family's half."""
    present = any(line.split()[:3] == ["table", _IP[family], "kube-proxy"] for line in tables_listing.splitlines())
    return f"delete table {TABLES[family]}\n" if present else ""


def sysctls(family="ipv4"):
    # kind sets conntrack.tcpBeLiberal for the nftables proxy (kubernetes
    # issue 117924); the timeouts are kube-proxy's defaults. The same for
    # either family (net.netfilter conntrack covers both).
    return ["net.netfilter.nf_conntrack_tcp_be_liberal=1",
            "net.netfilter.nf_conntrack_tcp_timeout_established=86400",
            "net.netfilter.nf_conntrack_tcp_timeout_close_wait=3600"]
