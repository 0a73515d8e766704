#!/usr/bin/env python3
"""Tests of the kube-proxy rule generator (kube_proxy_rules.py).

  Generator   pure: chain names against kube-proxy's own test vectors, the
              rules each Service shape produces, validation errors
  InNetns     root: the output applied with the real iptables-restore and
              nft in a throwaway network namespace (unshare --net): it loads,
              a second sync changes nothing, cleanup removes kube-proxy's
              rules and leaves another program's rule alone
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


def desc(doc=None):
    return model.parse(json.loads(json.dumps(doc or SAMPLE)))


class Generator(unittest.TestCase):
    def test_chain_names_hash_as_kube_proxy_does(self):
        # The kubernetes Service's chain on every cluster, and kube-proxy's nftables test vectors.
        self.assertEqual(names.iptables_chain("KUBE-SVC-", "default/kubernetes:https", "tcp"), "KUBE-SVC-NPX46M4PTMTKRN6Y")
        self.assertEqual(names.nft_service_base("ns1", "svc1", "tcp", "p80"), "ULMVA6XW-ns1/svc1/tcp/p80")
        self.assertEqual(names.nft_endpoint_base("ns1", "svc1", "tcp", "p80", "10.180.0.1", 80),
                         "5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80")

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
            path = Path(d) / "services.json"
            path.write_text(json.dumps(SAMPLE))
            env = dict(os.environ, GEN=f"{sys.executable} {CLI}", SVC=str(path))
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


if __name__ == "__main__":
    unittest.main()
