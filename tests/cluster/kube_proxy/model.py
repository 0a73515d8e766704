"""The Service/Endpoints description the kube-proxy rule generator reads, and
what kube-proxy derives from it for one node.

Stands in for the API objects kube-proxy watches (Service, EndpointSlice);
it keeps only the fields that change the rules kube-proxy v1.31 writes for
ClusterIP and NodePort Services, and rejects everything else by name, so a
typo is an error and not a silently different ruleset:

  {"clusterCIDR": "10.244.0.0/16",           kind's --cluster-cidr (detectLocalMode ClusterCIDR)
   "serviceCIDRs": [],                        ServiceCIDR objects (nftables drop rule); empty as
                                              in v1.31 with MultiCIDRServiceAllocator off
   "services": [
     {"namespace": "default", "name": "kubernetes", "clusterIP": "10.96.0.1",
      "type": "ClusterIP" | "NodePort",      (default ClusterIP)
      "externalTrafficPolicy": "Cluster" | "Local",   (NodePort only; default Cluster)
      "ports": [{"name": "https", "protocol": "TCP" | "UDP", "port": 443,
                 "targetPort": 6443, "nodePort": 30443}],
      "endpoints": [{"ip": "172.18.0.2", "node": "node1", "hostNetwork": true,
                     "ports": {"https": 6443}}]}]}

An endpoint's port for a service port is endpoints[].ports[name], else the
port's targetPort, else its port. hostNetwork changes nothing in kube-proxy's
rules (it cannot tell); the test harness reads it to start the right server.

A description is of one IP family, which the caller chooses (parse(doc,
family)): every address in it (clusterCIDR, serviceCIDRs, clusterIP,
endpoints[].ip) must be of that family, as for one of kube-proxy's
single-family proxiers (a dual-stack kube-proxy runs one per family, each
seeing only its family's ClusterIPs and EndpointSlices). For "ipv6", kind's
defaults are clusterCIDR fd00:10:244::/56 and Service CIDR fd00:10:96::/112.
Addresses are kept in their canonical form (RFC 5952 for IPv6), as Go's
net.IP.String() prints them in kube-proxy's rules.

Left out: LoadBalancer, externalIPs, session affinity, internalTrafficPolicy,
topology hints, terminating endpoints, dual-stack in one description
(kube-proxy writes rules for them; no kovs test needs them yet).
"""

import ipaddress
import re
from dataclasses import dataclass, field

PROTOCOLS = ("TCP", "UDP")
FAMILIES = ("ipv4", "ipv6")               # v1.IPv4Protocol / v1.IPv6Protocol
_VERSION = {"ipv4": 4, "ipv6": 6}
NODE_PORT_RANGE = (30000, 32767)          # the API server's default --service-node-port-range
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class DescriptionError(ValueError):
    """A bad description; the message names the object and the field."""


@dataclass(frozen=True)
class Endpoint:
    ip: str
    port: int
    node: str
    host_network: bool

    # kube-proxy's BaseEndpointInfo.String(), net.JoinHostPort(ip, port):
    # "10.244.1.3:8080", "[fd00:10:244:1::3]:8080". It is what the iptables
    # DNAT and nftables dnat rules are written with, and the iptables
    # KUBE-SEP- chain name is a hash of it (brackets included).
    def address(self):
        host = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class ServicePort:
    namespace: str
    service: str
    port_name: str
    protocol: str                            # "tcp" / "udp", as kube-proxy lower-cases it
    cluster_ip: str
    port: int
    node_port: int                           # 0: none
    external_local: bool                     # externalTrafficPolicy: Local
    endpoints: tuple = field(default_factory=tuple)

    def name(self):                          # proxy.ServicePortName.String()
        suffix = f":{self.port_name}" if self.port_name else ""
        return f"{self.namespace}/{self.service}{suffix}"

    # What proxy.CategorizeEndpoints returns for this node (all endpoints are
    # ready and serving here; internalTrafficPolicy is always Cluster).
    def categorize(self, node):
        cluster = list(self.endpoints)
        local = [e for e in self.endpoints if e.node == node]
        reachable = cluster if not self.external_local else _union(cluster, local)
        return cluster, local, reachable, bool(self.endpoints)


@dataclass(frozen=True)
class Description:
    family: str                              # "ipv4" / "ipv6": every address below is of it
    cluster_cidr: str
    service_cidrs: tuple
    ports: tuple                             # ServicePort, in description order


def _union(a, b):
    out = list(a)
    out.extend(e for e in b if e not in out)
    return out


def _keys(obj, where, required, optional=()):
    if not isinstance(obj, dict):
        raise DescriptionError(f"{where}: expected an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(required) - set(optional))
    if unknown:
        raise DescriptionError(f"{where}: unknown field(s) {', '.join(unknown)}")
    missing = [k for k in required if k not in obj]
    if missing:
        raise DescriptionError(f"{where}: missing field(s) {', '.join(missing)}")


def _family_name(family):
    return "IPv4" if family == "ipv4" else "IPv6"


def _of_family(addr, value, where, family, what):
    # Another family's address gets its own message: the address is fine,
    # the family is not (kube-proxy's proxier of one family skips the other
    # family's objects; here that is an error, not a silently smaller
    # ruleset). An IPv4-mapped IPv6 address is IPv4 to kube-proxy
    # (net.IP.To4), and a zone (fe80::1%eth0) is no Service or Pod address.
    if addr.version != _VERSION[family] or getattr(addr, "ipv4_mapped", None) or getattr(addr, "scope_id", None):
        raise DescriptionError(f"{where}: {value} is not an {_family_name(family)} {what} (family {family})")


def parse_ip(value, where, family):
    """The canonical form of an address of `family`, else a DescriptionError."""
    try:
        if not isinstance(value, str):
            raise ValueError
        addr = ipaddress.ip_address(value)
    except ValueError:
        raise DescriptionError(f"{where}: {value!r} is not an {_family_name(family)} address") from None
    _of_family(addr, value, where, family, "address")
    return str(addr)


def _cidr(value, where, family):
    try:
        if not isinstance(value, str):
            raise ValueError
        net = ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise DescriptionError(f"{where}: {value!r} is not an {_family_name(family)} CIDR") from None
    _of_family(net.network_address, value, where, family, "CIDR")
    return str(net)


def _port(value, where, lo=1, hi=65535):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise DescriptionError(f"{where}: {value!r} is not a port number in {lo}-{hi}")
    return value


def _label(value, where):
    if not isinstance(value, str) or not _DNS_LABEL.match(value):
        raise DescriptionError(f"{where}: {value!r} is not a DNS-1123 label")
    return value


def _choice(value, where, choices):
    if value not in choices:
        raise DescriptionError(f"{where}: {value!r}: expected one of {', '.join(choices)}")
    return value


def parse(doc, family="ipv4"):
    """Validates a description (parsed JSON) of `family` ("ipv4" or "ipv6")
    and returns a Description."""
    if family not in FAMILIES:
        raise ValueError(f"family {family!r}: expected one of {', '.join(FAMILIES)}")
    _keys(doc, "description", ["clusterCIDR", "services"], ["serviceCIDRs"])
    cluster_cidr = _cidr(doc["clusterCIDR"], "clusterCIDR", family)
    cidrs = doc.get("serviceCIDRs", [])
    if not isinstance(cidrs, list):
        raise DescriptionError("serviceCIDRs: expected a list")
    service_cidrs = tuple(_cidr(c, f"serviceCIDRs[{i}]", family) for i, c in enumerate(cidrs))
    if not isinstance(doc["services"], list):
        raise DescriptionError("services: expected a list")
    ports, seen, cluster_ips, node_ports = [], set(), {}, {}
    for i, svc in enumerate(doc["services"]):
        where = f"services[{i}]"
        _keys(svc, where, ["namespace", "name", "clusterIP", "ports"],
              ["type", "externalTrafficPolicy", "endpoints"])
        ns = _label(svc["namespace"], f"{where}.namespace")
        name = _label(svc["name"], f"{where}.name")
        where = f"service {ns}/{name}"
        if (ns, name) in seen:
            raise DescriptionError(f"{where}: defined twice")
        seen.add((ns, name))
        cluster_ip = parse_ip(svc["clusterIP"], f"{where}: clusterIP", family)
        if cluster_ip in cluster_ips:
            raise DescriptionError(f"{where}: clusterIP {cluster_ip} is already service {cluster_ips[cluster_ip]}'s")
        cluster_ips[cluster_ip] = f"{ns}/{name}"
        kind = _choice(svc.get("type", "ClusterIP"), f"{where}: type", ("ClusterIP", "NodePort"))
        if "externalTrafficPolicy" in svc and kind != "NodePort":
            raise DescriptionError(f"{where}: externalTrafficPolicy is only for type NodePort")
        local = _choice(svc.get("externalTrafficPolicy", "Cluster"), f"{where}: externalTrafficPolicy",
                        ("Cluster", "Local")) == "Local"
        ports.extend(_service_ports(svc, where, ns, name, cluster_ip, kind, local, node_ports, family))
    return Description(family, cluster_cidr, service_cidrs, tuple(ports))


def _service_ports(svc, where, ns, name, cluster_ip, kind, local, node_ports, family):
    specs = svc["ports"]
    if not isinstance(specs, list) or not specs:
        raise DescriptionError(f"{where}: ports: expected a non-empty list")
    names, proto_ports, parsed = set(), set(), []
    for j, p in enumerate(specs):
        pw = f"{where}: ports[{j}]"
        _keys(p, pw, ["protocol", "port"], ["name", "targetPort", "nodePort"])
        pname = p.get("name", "")
        if pname or len(specs) > 1:
            _label(pname, f"{pw}.name (required with several ports)")
        if pname in names:
            raise DescriptionError(f"{pw}: port name {pname!r} used twice")
        names.add(pname)
        proto = _choice(p["protocol"], f"{pw}.protocol", PROTOCOLS)
        port = _port(p["port"], f"{pw}.port")
        if (proto, port) in proto_ports:
            raise DescriptionError(f"{pw}: {proto} port {port} used twice")
        proto_ports.add((proto, port))
        target = _port(p.get("targetPort", port), f"{pw}.targetPort")
        node_port = 0
        if kind == "NodePort":
            if "nodePort" not in p:
                raise DescriptionError(f"{pw}: type NodePort needs a nodePort (the generator allocates none)")
            node_port = _port(p["nodePort"], f"{pw}.nodePort", *NODE_PORT_RANGE)
            key = (proto, node_port)
            if key in node_ports:
                raise DescriptionError(f"{pw}: {proto} nodePort {node_port} is already {node_ports[key]}'s")
            node_ports[key] = f"{ns}/{name}"
        elif "nodePort" in p:
            raise DescriptionError(f"{pw}: nodePort is only for type NodePort")
        parsed.append((pname, proto, port, target, node_port))
    eps = svc.get("endpoints", [])
    if not isinstance(eps, list):
        raise DescriptionError(f"{where}: endpoints: expected a list")
    out = []
    for pname, proto, port, target, node_port in parsed:
        endpoints = tuple(_endpoint(e, f"{where}: endpoints[{k}]", names, pname, target, family)
                          for k, e in enumerate(eps))
        out.append(ServicePort(ns, name, pname, proto.lower(), cluster_ip, port, node_port, local, endpoints))
    return out


def _endpoint(e, where, port_names, pname, target, family):
    _keys(e, where, ["ip", "node"], ["hostNetwork", "ports"])
    ep_ip = parse_ip(e["ip"], f"{where}.ip", family)
    if not isinstance(e["node"], str) or not e["node"]:
        raise DescriptionError(f"{where}.node: expected a node name")
    host = e.get("hostNetwork", False)
    if not isinstance(host, bool):
        raise DescriptionError(f"{where}.hostNetwork: expected true or false")
    overrides = e.get("ports", {})
    if not isinstance(overrides, dict):
        raise DescriptionError(f"{where}.ports: expected an object of port name -> port")
    for k in overrides:
        if k not in port_names:
            raise DescriptionError(f"{where}.ports: {k!r} is not a port name of the service")
    port = _port(overrides.get(pname, target), f"{where}.ports[{pname!r}]")
    return Endpoint(ep_ip, port, e["node"], host)
