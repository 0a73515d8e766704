#!/usr/bin/env python3
"""Tests of the kube-proxy rule generator (kube_proxy_rules.py).

  Generator   pure: chain names against kube-proxy's own test vectors, the
              rules each Service shape produces, validation errors; for
              both families (IPv4 and IPv6 descriptions)
  InNetns     root: the output applied with the real iptables-restore /
              ip6tables-restore and nft in a throwaway network namespace
              (unshare --net): it loads, a second sync changes nothing,
              cleanup removes kube-proxy's rules and leaves another
              program's rule (and the other family's rules) alone
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True          # no __pycache__ in the source tree
from kube_proxy import iptables, model, names, nftables  # noqa: E402

CLI = str(HERE / "kube_proxy_rules.py")


def service(name, ip, endpoints, **kw):
    s = {"namespace": "default", "name": name, "clusterIP": ip, "endpoints": endpoints,
         "ports": kw.pop("ports", [{"name": "tcp", "protocol": "TCP", "port": 80, "targetPort": 8080}])}
    s.update(kw)
    return s


def ep(ip, node, **kw):
    return dict({"ip": ip, "node": node}, **kw)


SAMPLE = {"clusterCIDR": "10.244.0.0/16", "services": [
    service("kubernetes", "10.96.0.1", [ep("172.18.0.3", "node2", hostNetwork=True)],
            ports=[{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}]),
    service("spread", "10.96.0.14", [ep("10.244.1.3", "node1"), ep("10.244.2.2", "node2"), ep("10.244.3.2", "node3")]),
    service("np-local", "10.96.0.16", [ep("10.244.2.2", "node2")], type="NodePort", externalTrafficPolicy="Local",
            ports=[{"name": "udp", "protocol": "UDP", "port": 80, "targetPort": 8080, "nodePort": 30081}]),
    service("np", "10.96.0.15", [ep("10.244.2.2", "node2")], type="NodePort",
            ports=[{"name": "tcp", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080}]),
    service("empty", "10.96.0.30", []),
]}


# SAMPLE for the IPv6 proxier, with kind's IPv6 defaults (pods fd00:10:244::/56,
# Services fd00:10:96::/112, nodes on fc00:f853:ccd:e793::/64).
SAMPLE6 = {"clusterCIDR": "fd00:10:244::/56", "serviceCIDRs": ["fd00:10:96::/112"], "services": [
    service("kubernetes", "fd00:10:96::1", [ep("fc00:f853:ccd:e793::3", "node2", hostNetwork=True)],
            ports=[{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}]),
    service("spread", "fd00:10:96::14", [ep("fd00:10:244:1::3", "node1"), ep("fd00:10:244:2::2", "node2"),
                                         ep("fd00:10:244:3::2", "node3")]),
    service("np-local", "fd00:10:96::16", [ep("fd00:10:244:2::2", "node2")], type="NodePort",
            externalTrafficPolicy="Local",
            ports=[{"name": "udp", "protocol": "UDP", "port": 80, "targetPort": 8080, "nodePort": 30081}]),
    service("np", "fd00:10:96::15", [ep("fd00:10:244:2::2", "node2")], type="NodePort",
            ports=[{"name": "tcp", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080}]),
    service("empty", "fd00:10:96::30", []),
]}


def desc(doc=None):
    return model.parse(json.loads(json.dumps(doc or SAMPLE)))


def desc6(doc=None):
    return model.parse(json.loads(json.dumps(doc or SAMPLE6)), "ipv6")


class Generator(unittest.TestCase):
    def test_chain_names_hash_as_kube_proxy_does(self):
        # The kubernetes Service's chain on every cluster, and kube-proxy's nftables test vectors.
        self.assertEqual(names.iptables_chain("KUBE-SVC-", "default/kubernetes:https", "tcp"), "KUBE-SVC-NPX46M4PTMTKRN6Y")
        self.assertEqual(names.nft_service_base("ns1", "svc1", "tcp", "p80"), "ULMVA6XW-ns1/svc1/tcp/p80")
        self.assertEqual(names.nft_endpoint_base("ns1", "svc1", "tcp", "p80", "10.180.0.1", 80),
                         "5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80")

    def test_ipv6_chain_names_hash_as_kube_proxy_does(self):
        # The endpoint string is net.JoinHostPort's, brackets and all, and the
        # iptables hash is of it: kube-proxy's TestEnableLocalhostNodePortsIPv6.
        endpoint = model.Endpoint("ff06::c1", 80, "node1", False)
        self.assertEqual(endpoint.address(), "[ff06::c1]:80")
        self.assertEqual(model.Endpoint("10.180.0.1", 80, "node1", False).address(), "10.180.0.1:80")
        self.assertEqual(names.iptables_endpoint_chain("ns1/svc1:p80", "tcp", endpoint.address()),
                         "KUBE-SEP-LIGRYQQLSZN4UWQ5")
        # nftables writes the address's colons as dots: kube-proxy's TestTracePacketV6.
        self.assertEqual(names.nft_endpoint_base("ns1", "svc1", "tcp", "p80", "fd00:10:180::1", 80),
                         "ZVRFLKHO-ns1/svc1/tcp/p80__fd00.10.180..1/80")
        self.assertEqual(names.nft_endpoint_base("ns1", "svc1", "tcp", "p80", "fd00:10:180::2:1", 80),
                         "2CRNCTTE-ns1/svc1/tcp/p80__fd00.10.180..2.1/80")

    def test_iptables_service_rules(self):
        out = iptables.sync(desc(), "node1", False, iptables.Saved(""))
        svc = names.iptables_chain("KUBE-SVC-", "default/spread:tcp", "tcp")
        self.assertIn(f'-A KUBE-SERVICES -m comment --comment "default/spread:tcp cluster IP" -m tcp -p tcp '
                      f"-d 10.96.0.14 --dport 80 -j {svc}", out)
        self.assertIn(f"-A {svc} -m comment --comment \"default/spread:tcp cluster IP\" -m tcp -p tcp -d 10.96.0.14 "
                      "--dport 80 ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ", out)
        # The statistic split: 1/3, then 1/2 of the rest, then the last one always.
        split = [line for line in out.splitlines() if line.startswith(f"-A {svc} ") and "-> " in line]
        self.assertEqual(len(split), 3)
        self.assertIn("--probability 0.3333333333", split[0])
        self.assertIn("--probability 0.5000000000", split[1])
        self.assertNotIn("statistic", split[2])
        sep = names.iptables_endpoint_chain("default/spread:tcp", "tcp", "10.244.2.2:8080")
        self.assertIn(f"-A {sep} -m comment --comment default/spread:tcp -s 10.244.2.2 -j KUBE-MARK-MASQ", out)
        self.assertIn(f"-A {sep} -m comment --comment default/spread:tcp -m tcp -p tcp -j DNAT --to-destination "
                      "10.244.2.2:8080", out)
        self.assertIn('-A KUBE-SERVICES -m comment --comment "default/empty:tcp has no endpoints"', out)
        self.assertTrue(out.rstrip().endswith("-j KUBE-NODEPORTS\nCOMMIT"), "the nodeports jump is KUBE-SERVICES' last rule")

    def test_iptables_node_ports_by_policy(self):
        on1 = iptables.sync(desc(), "node1", False, iptables.Saved(""))
        on2 = iptables.sync(desc(), "node2", False, iptables.Saved(""))
        ext = names.iptables_chain("KUBE-EXT-", "default/np-local:udp", "udp")
        svl = names.iptables_chain("KUBE-SVL-", "default/np-local:udp", "udp")
        # Local, no endpoint on node1: dropped in filter, no KUBE-SVL chain.
        self.assertIn('-A KUBE-EXTERNAL-SERVICES -m comment --comment "default/np-local:udp has no local endpoints" '
                      "-m addrtype --dst-type LOCAL -m udp -p udp --dport 30081 -j DROP", on1)
        self.assertNotIn(svl, on1)
        self.assertIn(f"-A {ext} -j {svl}", on2)
        self.assertNotIn("has no local endpoints", on2)
        self.assertIn("-s 10.244.0.0/16 -j KUBE-SVC-", on2)           # pods short-circuit to the cluster chain
        # Cluster: marked for masquerade, on every node.
        ext_np = names.iptables_chain("KUBE-EXT-", "default/np:tcp", "tcp")
        self.assertIn(f'-A {ext_np} -m comment --comment "masquerade traffic for default/np:tcp external '
                      'destinations" -j KUBE-MARK-MASQ', on1)

    def test_iptables_invalid_drop_follows_tcp_be_liberal(self):
        rule = "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP"
        self.assertIn(rule, iptables.sync(desc(), "node1", False, iptables.Saved("")))
        self.assertNotIn(rule, iptables.sync(desc(), "node1", True, iptables.Saved("")))

    def test_iptables_jumps_only_when_missing_and_stale_chains_deleted(self):
        first = iptables.sync(desc(), "node1", False, iptables.Saved(""))
        self.assertEqual(sum(line.startswith("-I ") for line in first.splitlines()), 14)
        saved = "\n".join(["*filter", ":INPUT ACCEPT [0:0]",
                           '-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS',
                           "COMMIT", "*nat", ":KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]", ":OTHER - [0:0]", "COMMIT"])
        again = iptables.sync(desc(), "node1", False, iptables.Saved(saved))
        self.assertNotIn("-I INPUT 1 -m comment --comment \"kubernetes health check service ports\"", again)
        self.assertEqual(sum(line.startswith("-I ") for line in again.splitlines()), 13)
        self.assertIn("-X KUBE-SVC-AAAAAAAAAAAAAAAA", again)
        self.assertNotIn("OTHER", again)

    def test_iptables_cleanup_touches_only_kube_proxy(self):
        saved = "\n".join([
            "*nat", ":PREROUTING ACCEPT [0:0]", ":KUBE-SERVICES - [0:0]", ":KUBE-SEP-X - [0:0]", ":CNI-HOSTPORT-DNAT - [0:0]",
            '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
            "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT", "COMMIT"])
        out = iptables.cleanup(iptables.Saved(saved))
        self.assertIn('-D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES', out)
        self.assertIn("-X KUBE-SEP-X", out)
        self.assertNotIn("CNI-", out)
        self.assertEqual(iptables.cleanup(iptables.Saved("*nat\nCOMMIT\n")), "")

    def test_iptables_localhost_nodeports_ipv4_only(self):
        nodeports = ('-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the '
                     'last rule in this chain" -m addrtype --dst-type LOCAL')
        localnet = ('-A KUBE-FIREWALL -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 '
                    "! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP")
        out4 = iptables.sync(desc(), "node1", False, iptables.Saved(""))
        self.assertIn(f"{nodeports} -j KUBE-NODEPORTS\n", out4)
        self.assertIn(localnet, out4)
        self.assertIn(":KUBE-FIREWALL - [0:0]", out4)
        out6 = iptables.sync(desc6(), "node1", False, iptables.Saved(""))
        self.assertTrue(out6.endswith(f"{nodeports} ! -d ::1/128 -j KUBE-NODEPORTS\nCOMMIT\n"), out6[-300:])
        self.assertNotIn("127.0.0.0/8", out6)
        self.assertNotIn("localnet", out6)
        # KUBE-FIREWALL is only ensured for the kubelet jumps: created when
        # missing, never declared (flushed) when it is there.
        self.assertIn("-I INPUT 1 -j KUBE-FIREWALL", out6)
        self.assertIn(":KUBE-FIREWALL - [0:0]", out6)
        saved = "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\nCOMMIT\n"
        again = iptables.sync(desc6(), "node1", False, iptables.Saved(saved))
        self.assertNotIn(":KUBE-FIREWALL", again)
        self.assertNotIn("-I INPUT 1 -j KUBE-FIREWALL", again)
        self.assertIn("-I OUTPUT 1 -j KUBE-FIREWALL", again)

    def test_iptables_ipv6_service_rules(self):
        out = iptables.sync(desc6(), "node1", False, iptables.Saved(""))
        svc = names.iptables_chain("KUBE-SVC-", "default/spread:tcp", "tcp")
        self.assertIn(f'-A KUBE-SERVICES -m comment --comment "default/spread:tcp cluster IP" -m tcp -p tcp '
                      f"-d fd00:10:96::14 --dport 80 -j {svc}", out)
        self.assertIn(f'-A {svc} -m comment --comment "default/spread:tcp cluster IP" -m tcp -p tcp -d fd00:10:96::14 '
                      "--dport 80 ! -s fd00:10:244::/56 -j KUBE-MARK-MASQ", out)
        sep = names.iptables_endpoint_chain("default/spread:tcp", "tcp", "[fd00:10:244:2::2]:8080")
        self.assertIn(f'-A {svc} -m comment --comment "default/spread:tcp -> [fd00:10:244:2::2]:8080" '
                      f"-m statistic --mode random --probability 0.5000000000 -j {sep}", out)
        self.assertIn(f"-A {sep} -m comment --comment default/spread:tcp -s fd00:10:244:2::2 -j KUBE-MARK-MASQ", out)
        self.assertIn(f"-A {sep} -m comment --comment default/spread:tcp -m tcp -p tcp -j DNAT --to-destination "
                      "[fd00:10:244:2::2]:8080", out)
        self.assertIn('-A KUBE-SERVICES -m comment --comment "default/empty:tcp has no endpoints" -m tcp -p tcp '
                      "-d fd00:10:96::30 --dport 80 -j REJECT", out)
        self.assertIn('-A KUBE-EXTERNAL-SERVICES -m comment --comment "default/np-local:udp has no local endpoints" '
                      "-m addrtype --dst-type LOCAL -m udp -p udp --dport 30081 -j DROP", out)
        on2 = iptables.sync(desc6(), "node2", False, iptables.Saved(""))
        self.assertIn('"pod traffic for default/np-local:udp external destinations" -s fd00:10:244::/56 -j KUBE-SVC-', on2)

    def test_nftables_service_rules(self):
        out = nftables.sync(desc(), "node2", "172.18.0.3", {})
        base = names.nft_service_base("default", "spread", "tcp", "tcp")
        self.assertIn(f"add element ip kube-proxy service-ips {{ 10.96.0.14 . tcp . 80 : goto service-{base} }}", out)
        self.assertIn(f"add rule ip kube-proxy service-{base} ip daddr 10.96.0.14 tcp dport 80 "
                      "ip saddr != 10.244.0.0/16 jump mark-for-masquerade", out)
        self.assertIn(f"add rule ip kube-proxy service-{base} numgen random mod 3 vmap {{ 0 : goto endpoint-", out)
        self.assertIn("add element ip kube-proxy nodeport-ips { 172.18.0.3 }", out)
        local = names.nft_service_base("default", "np-local", "udp", "udp")
        self.assertIn(f"add rule ip kube-proxy external-{local} ip saddr 10.244.0.0/16 goto service-{local} "
                      'comment "short-circuit pod traffic"', out)
        self.assertIn(f"add rule ip kube-proxy external-{local} goto local-{local}", out)
        self.assertIn('add element ip kube-proxy no-endpoint-services { 10.96.0.30 . tcp . 80 comment "default/empty:tcp" '
                      ": goto reject-chain }", out)
        on1 = nftables.sync(desc(), "node1", "172.18.0.2", {})
        self.assertIn('add element ip kube-proxy no-endpoint-nodeports { udp . 30081 comment "default/np-local:udp" : drop }',
                      on1)

    def test_nftables_ipv6_rules(self):
        out = nftables.sync(desc6(), "node2", "fc00:f853:ccd:e793::3", {})
        self.assertTrue(out.startswith('add table ip6 kube-proxy { comment "rules for kube-proxy" ; }\n'))
        self.assertTrue(all(" ip6 kube-proxy " in f"{line} " for line in out.splitlines()), "one table, of ip6")
        self.assertNotRegex(out, r"\bip (daddr|saddr)\b")
        self.assertNotIn("ipv4_addr", out)
        self.assertIn('add set ip6 kube-proxy cluster-ips { type ipv6_addr ; comment "Active ClusterIPs" ; }', out)
        self.assertIn("add map ip6 kube-proxy service-ips { type ipv6_addr . inet_proto . inet_service : verdict ;", out)
        self.assertIn("add rule ip6 kube-proxy cluster-ips-check ip6 daddr @cluster-ips reject", out)
        self.assertIn("add rule ip6 kube-proxy cluster-ips-check ip6 daddr { fd00:10:96::/112 } drop", out)
        self.assertIn("add rule ip6 kube-proxy services ip6 daddr @nodeport-ips meta l4proto . th dport "
                      "vmap @service-nodeports", out)
        self.assertIn("add element ip6 kube-proxy nodeport-ips { fc00:f853:ccd:e793::3 }", out)
        base = names.nft_service_base("default", "spread", "tcp", "tcp")
        self.assertIn(f"add element ip6 kube-proxy service-ips {{ fd00:10:96::14 . tcp . 80 : goto service-{base} }}", out)
        self.assertIn(f"add rule ip6 kube-proxy service-{base} ip6 daddr fd00:10:96::14 tcp dport 80 "
                      "ip6 saddr != fd00:10:244::/56 jump mark-for-masquerade", out)
        endpoint = "endpoint-" + names.nft_endpoint_base("default", "spread", "tcp", "tcp", "fd00:10:244:2::2", 8080)
        self.assertTrue(endpoint.endswith("-default/spread/tcp/tcp__fd00.10.244.2..2/8080"), endpoint)
        self.assertIn(f"add rule ip6 kube-proxy {endpoint} ip6 saddr fd00:10:244:2::2 jump mark-for-masquerade", out)
        self.assertIn(f"add rule ip6 kube-proxy {endpoint} meta l4proto tcp dnat to [fd00:10:244:2::2]:8080", out)
        local = names.nft_service_base("default", "np-local", "udp", "udp")
        self.assertIn(f"add rule ip6 kube-proxy external-{local} ip6 saddr fd00:10:244::/56 goto service-{local} "
                      'comment "short-circuit pod traffic"', out)
        self.assertIn(f"add rule ip6 kube-proxy external-{local} fib saddr type local jump mark-for-masquerade", out)
        self.assertIn('add element ip6 kube-proxy no-endpoint-services { fd00:10:96::30 . tcp . 80 comment '
                      '"default/empty:tcp" : goto reject-chain }', out)

    def test_nftables_cleanup_per_family(self):
        both = "table ip filter\ntable ip kube-proxy\ntable ip6 kube-proxy\n"
        self.assertEqual(nftables.cleanup(both), "delete table ip kube-proxy\n")
        self.assertEqual(nftables.cleanup(both, "ipv6"), "delete table ip6 kube-proxy\n")
        self.assertEqual(nftables.cleanup("table ip kube-proxy\n", "ipv6"), "")
        self.assertEqual(nftables.cleanup("table ip6 kube-proxy\n"), "")

    def test_nftables_stale_chains_flushed_then_deleted(self):
        out = nftables.sync(desc(), "node1", "172.18.0.2", {"service-X-a/b/tcp/p": True, "endpoint-Y-a/b/tcp/p__1.2.3.4/5": False,
                                                             "services": True})
        self.assertIn("flush chain ip kube-proxy service-X-a/b/tcp/p", out)
        self.assertNotIn("delete chain ip kube-proxy service-X-a/b/tcp/p", out)
        self.assertIn("delete chain ip kube-proxy endpoint-Y-a/b/tcp/p__1.2.3.4/5", out)
        listing = "table ip kube-proxy {\n\tchain service-X-a/b/tcp/p {\n\t\tjump mark-for-masquerade\n\t}\n" \
                  "\tchain endpoint-Y-a/b/tcp/p__1.2.3.4/5 {\n\t}\n}\n"
        self.assertEqual(nftables.chains_in(listing), {"service-X-a/b/tcp/p": True, "endpoint-Y-a/b/tcp/p__1.2.3.4/5": False})

    def test_sysctls_per_mode(self):
        self.assertIn("net.ipv4.conf.all.route_localnet=1", iptables.sysctls())
        self.assertIn("net.netfilter.nf_conntrack_tcp_be_liberal=1", nftables.sysctls())
        self.assertNotIn("net.ipv4.conf.all.route_localnet=1", nftables.sysctls())

    def test_sysctls_per_family(self):
        # No localhost NodePorts for IPv6, so no route_localnet; conntrack is for both.
        self.assertEqual(iptables.sysctls("ipv6"), [s for s in iptables.sysctls() if "route_localnet" not in s])
        self.assertIn("net.netfilter.nf_conntrack_tcp_timeout_established=86400", iptables.sysctls("ipv6"))
        self.assertEqual(nftables.sysctls("ipv6"), nftables.sysctls())

    def test_bad_descriptions_name_the_object_and_field(self):
        cases = [
            ({"services": []}, "missing field(s) clusterCIDR"),
            (dict(SAMPLE, extra=1), "unknown field(s) extra"),
            ({"clusterCIDR": "10.244.0.1/16", "services": []}, "clusterCIDR: '10.244.0.1/16' is not an IPv4 CIDR"),
            (dict(SAMPLE, services=[service("a", "10.96.0.1", []), service("b", "10.96.0.1", [])]),
             "service default/b: clusterIP 10.96.0.1 is already service default/a's"),
            (dict(SAMPLE, services=[service("a", "10.96.0.1", [], ports=[{"protocol": "SCTP", "port": 1}])]),
             "service default/a: ports[0].protocol: 'SCTP': expected one of TCP, UDP"),
            (dict(SAMPLE, services=[service("a", "10.96.0.1", [], type="NodePort",
                                            ports=[{"protocol": "TCP", "port": 80, "nodePort": 80}])]),
             "ports[0].nodePort: 80 is not a port number in 30000-32767"),
            (dict(SAMPLE, services=[service("a", "10.96.0.1", [], externalTrafficPolicy="Local")]),
             "service default/a: externalTrafficPolicy is only for type NodePort"),
            (dict(SAMPLE, services=[service("a", "10.96.0.1", [ep("10.244.1.2", "node1", ports={"http": 1})])]),
             "service default/a: endpoints[0].ports: 'http' is not a port name of the service"),
            (dict(SAMPLE, services=[service("Bad", "10.96.0.1", [])]), "services[0].name: 'Bad' is not a DNS-1123 label"),
            (dict(SAMPLE, services=[service("a", "10.96.0.300", [])]), "service default/a: clusterIP: '10.96.0.300'"),
        ]
        for doc, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(model.DescriptionError) as e:
                    model.parse(doc)
                self.assertIn(message, str(e.exception))

    def test_addresses_must_be_of_the_family(self):
        v6 = SAMPLE6["services"][0]
        cases = [
            (SAMPLE, "ipv6", "clusterCIDR: 10.244.0.0/16 is not an IPv6 CIDR (family ipv6)"),
            (SAMPLE6, "ipv4", "clusterCIDR: fd00:10:244::/56 is not an IPv4 CIDR (family ipv4)"),
            (dict(SAMPLE6, serviceCIDRs=["10.96.0.0/16"]), "ipv6",
             "serviceCIDRs[0]: 10.96.0.0/16 is not an IPv6 CIDR (family ipv6)"),
            (dict(SAMPLE6, services=[dict(v6, clusterIP="10.96.0.1")]), "ipv6",
             "service default/kubernetes: clusterIP: 10.96.0.1 is not an IPv6 address (family ipv6)"),
            (dict(SAMPLE, services=[service("x", "fd00:10:96::1", [])]), "ipv4",
             "service default/x: clusterIP: fd00:10:96::1 is not an IPv4 address (family ipv4)"),
            (dict(SAMPLE6, services=[dict(v6, endpoints=[ep("172.18.0.3", "node2")])]), "ipv6",
             "service default/kubernetes: endpoints[0].ip: 172.18.0.3 is not an IPv6 address (family ipv6)"),
            # IPv4-mapped is IPv4 to kube-proxy; a zone is no Pod address.
            (dict(SAMPLE6, services=[dict(v6, clusterIP="::ffff:10.96.0.1")]), "ipv6",
             "clusterIP: ::ffff:10.96.0.1 is not an IPv6 address"),
            (dict(SAMPLE6, services=[dict(v6, endpoints=[ep("fe80::1%eth0", "node2")])]), "ipv6",
             "endpoints[0].ip: fe80::1%eth0 is not an IPv6 address"),
            (dict(SAMPLE6, services=[dict(v6, clusterIP="fd00:10:96::g")]), "ipv6",
             "clusterIP: 'fd00:10:96::g' is not an IPv6 address"),
            (dict(SAMPLE6, clusterCIDR="fd00:10:244::1/56"), "ipv6", "clusterCIDR: 'fd00:10:244::1/56' is not an IPv6 CIDR"),
            (dict(SAMPLE, services=[service("x", 174063617, [])]), "ipv4", "clusterIP: 174063617 is not an IPv4 address"),
        ]
        for doc, family, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(model.DescriptionError) as e:
                    model.parse(json.loads(json.dumps(doc)), family)
                self.assertIn(message, str(e.exception))

    def test_ipv6_addresses_are_canonical(self):
        # As Go's net.IP.String() prints them in kube-proxy's rules.
        d = desc6(dict(SAMPLE6, clusterCIDR="FD00:10:244:0::/56", services=[
            service("a", "FD00:10:96:0:0::A", [ep("fd00:0010:0244:0001:0000:0000:0000:0003", "node1")])]))
        self.assertEqual(d.cluster_cidr, "fd00:10:244::/56")
        self.assertEqual(d.ports[0].cluster_ip, "fd00:10:96::a")
        self.assertEqual(d.ports[0].endpoints[0].address(), "[fd00:10:244:1::3]:8080")

    def test_cli_ipv6(self):
        with tempfile.TemporaryDirectory() as d:
            v4, v6 = Path(d) / "v4.json", Path(d) / "v6.json"
            v4.write_text(json.dumps(SAMPLE))
            v6.write_text(json.dumps(SAMPLE6))

            def cli(*args):
                return subprocess.run([sys.executable, CLI, *args], input="", capture_output=True, text=True)

            r = cli("nftables", "sync", "--family", "ipv6", "--services", str(v6), "--node", "node2",
                    "--node-ip", "fc00:f853:ccd:e793::3")
            self.assertEqual((r.returncode, r.stderr), (0, ""))
            self.assertEqual(r.stdout, nftables.sync(desc6(), "node2", "fc00:f853:ccd:e793::3", {}))
            r = cli("iptables", "sync", "--family", "ipv6", "--services", str(v6), "--node", "node1")
            self.assertEqual(r.stdout, iptables.sync(desc6(), "node1", False, iptables.Saved("")))
            r = cli("iptables", "sysctls", "--family", "ipv6")
            self.assertNotIn("route_localnet", r.stdout)
            # A description or --node-ip of the other family: one line, nothing on stdout.
            r = cli("iptables", "sync", "--family", "ipv6", "--services", str(v4), "--node", "node1")
            self.assertEqual((r.returncode, r.stdout), (2, ""))
            self.assertEqual(r.stderr, f"kube_proxy_rules.py: {v4}: clusterCIDR: 10.244.0.0/16 is not an IPv6 CIDR "
                                       "(family ipv6)\n")
            r = cli("nftables", "sync", "--family", "ipv6", "--services", str(v6), "--node", "node1",
                    "--node-ip", "172.18.0.2")
            self.assertEqual((r.returncode, r.stdout), (2, ""))
            self.assertIn("--node-ip: 172.18.0.2 is not an IPv6 address (family ipv6)", r.stderr)
            r = cli("check", "--services", str(v6))
            self.assertEqual(r.returncode, 2)
            self.assertIn("clusterCIDR: fd00:10:244::/56 is not an IPv4 CIDR (family ipv4)", r.stderr)

    def test_cli_rejects_a_bad_file_with_nothing_on_stdout(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump({"clusterCIDR": "10.244.0.0/16", "services": [{"namespace": "default"}]}, f)
            f.flush()
            r = subprocess.run([sys.executable, CLI, "iptables", "sync", "--services", f.name, "--node", "node1"],
                               input="", capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertIn("services[0]: missing field(s) name, clusterIP, ports", r.stderr)


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare") and shutil.which("nft"),
                     "needs root, unshare and nft (a throwaway network namespace)")
class InNetns(unittest.TestCase):
    """Runs a bash script in a new network namespace that dies with it."""

    def run_in_netns(self, script):
        with tempfile.TemporaryDirectory() as d:
            path, path6 = Path(d) / "services.json", Path(d) / "services6.json"
            path.write_text(json.dumps(SAMPLE))
            path6.write_text(json.dumps(SAMPLE6))
            env = dict(os.environ, GEN=f"{sys.executable} {CLI}", SVC=str(path), SVC6=str(path6))
            r = subprocess.run(["unshare", "--net", "bash", "-euo", "pipefail", "-c", script],
                               env=env, cwd=d, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, f"script failed:\n{r.stdout}\n{r.stderr}")
        return r.stdout

    def test_iptables_applies_resyncs_and_cleans_up(self):
        out = self.run_in_netns("""
            iptables -t nat -A POSTROUTING -s 10.9.0.0/16 -j MASQUERADE        # another program's rule
            sync() { iptables-save | $GEN iptables sync --services $SVC --node node1 | iptables-restore -w 5 --noflush; }
            sync; iptables-save | grep -v '^#' | sed 's/\\[[0-9:]*\\]//' > first
            sync; iptables-save | grep -v '^#' | sed 's/\\[[0-9:]*\\]//' > second
            cmp first second && echo same
            grep -c -- '-A KUBE-SVC-NPX46M4PTMTKRN6Y' first
            iptables-save | $GEN iptables cleanup | iptables-restore -w 5 --noflush
            iptables-save -t nat | grep -c -e '-A KUBE-SERVICES' -e 'KUBE-SEP-' -e 'KUBE-POSTROUTING' || true
            iptables-save -t nat | grep -- '-A POSTROUTING'
        """)
        lines = out.split()
        self.assertEqual(lines[0], "same", out)
        self.assertEqual(lines[1], "2", out)
        self.assertEqual(lines[2], "0", out)
        self.assertIn("-A POSTROUTING -s 10.9.0.0/16 -j MASQUERADE", out)

    def test_nftables_applies_resyncs_and_cleans_up(self):
        out = self.run_in_netns("""
            nft add table ip other; nft add chain ip other c '{ type nat hook postrouting priority 100 ; }'
            sync() { (nft list table ip kube-proxy 2>/dev/null || true) |
                     $GEN nftables sync --services $SVC --node node1 --node-ip 172.18.0.2 | nft -f -; }
            # Sorted: each sync re-creates the base chains (kube-proxy's first-sync
            # delete), which moves them to the end of the listing.
            sync; nft -s list table ip kube-proxy | sort > first
            sync; nft -s list table ip kube-proxy | sort > second
            cmp first second && echo same
            grep -c 'chain .*/' first
            nft list tables | $GEN nftables cleanup | nft -f -
            nft list tables
        """)
        self.assertTrue(out.startswith("same\n"), out)
        self.assertGreater(int(out.split()[1]), 10, out)
        self.assertNotIn("kube-proxy", out)
        self.assertIn("table ip other", out)

    @unittest.skipUnless(shutil.which("ip6tables-restore"), "needs ip6tables-restore")
    def test_ip6tables_applies_resyncs_and_cleans_up(self):
        out = self.run_in_netns("""
            ip6tables -t nat -A POSTROUTING -s fd99::/64 -j MASQUERADE        # another program's rule
            sync() { ip6tables-save | $GEN iptables sync --family ipv6 --services $SVC6 --node node2 |
                     ip6tables-restore -w 5 --noflush; }
            sync; ip6tables-save | grep -v '^#' | sed 's/\\[[0-9:]*\\]//' > first
            sync; ip6tables-save | grep -v '^#' | sed 's/\\[[0-9:]*\\]//' > second
            cmp first second && echo same
            grep -c -- '-A KUBE-SVC-NPX46M4PTMTKRN6Y' first
            grep -c -e 'DNAT --to-destination \\[fd00:10:244:2::2\\]:8080' -e '! -d ::1/128 .*-j KUBE-NODEPORTS' first
            grep -c -e '^-A KUBE-FIREWALL' -e '127.0.0.0' first || true
            ip6tables-save | $GEN iptables cleanup --family ipv6 | ip6tables-restore -w 5 --noflush
            ip6tables-save -t nat | grep -c -e '-A KUBE-SERVICES' -e 'KUBE-SEP-' -e 'KUBE-POSTROUTING' || true
            ip6tables-save -t nat | grep -- '-A POSTROUTING'
            iptables-save | grep -c KUBE- || true                             # IPv4 untouched throughout
        """)
        lines = out.splitlines()
        self.assertEqual(lines[0], "same", out)
        self.assertEqual(lines[1], "2", out)
        self.assertEqual(lines[2], "4", out)            # 3 DNATs to [fd00:10:244:2::2]:8080 on node2, the nodeports jump
        self.assertEqual(lines[3], "0", out)            # no localnet rule for IPv6
        self.assertEqual(lines[4], "0", out)
        self.assertEqual(lines[5], "-A POSTROUTING -s fd99::/64 -j MASQUERADE", out)
        self.assertEqual(lines[6], "0", out)

    def test_nftables_ipv6_applies_resyncs_and_cleans_up(self):
        out = self.run_in_netns("""
            nft add table ip6 other; nft add chain ip6 other c '{ type nat hook postrouting priority 100 ; }'
            nft list tables | $GEN nftables cleanup --family ipv6 | wc -c               # nothing to clean yet
            $GEN nftables sync --services $SVC --node node1 --node-ip 172.18.0.2 </dev/null | nft -f -   # IPv4's
            sync() { (nft list table ip6 kube-proxy 2>/dev/null || true) |
                     $GEN nftables sync --family ipv6 --services $SVC6 --node node1 \\
                          --node-ip fc00:f853:ccd:e793::2 | nft -f -; }
            sync; nft -s list table ip6 kube-proxy | sort > first
            sync; nft -s list table ip6 kube-proxy | sort > second
            cmp first second && echo same
            grep -c 'chain .*/' first
            grep -c -e 'dnat to \\[fd00:10:244:2::2\\]:8080' -e 'elements = { fc00:f853:ccd:e793::2 }' first
            nft list tables | $GEN nftables cleanup --family ipv6 | nft -f -
            nft list tables
        """)
        lines = out.splitlines()
        self.assertEqual(lines[0], "0", out)
        self.assertEqual(lines[1], "same", out)
        self.assertGreater(int(lines[2]), 10, out)
        self.assertEqual(lines[3], "4", out)            # 3 endpoint chains on fd00:10:244:2::2, the node's NodePort IP
        self.assertNotIn("table ip6 kube-proxy", out)
        self.assertIn("table ip kube-proxy", out)       # the IPv4 proxier's table is the other family's half
        self.assertIn("table ip6 other", out)


if __name__ == "__main__":
    unittest.main()
