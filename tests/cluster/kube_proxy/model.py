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
Left out: LoadBalancer, externalIPs, session affinity, internalTrafficPolicy,
topology hints, terminating endpoints, IPv6 (kube-proxy writes rules for them;
no kovs test needs them yet).
"""

import ipaddress
import re
from dataclasses import dataclass, field

PROTOCOLS = ("TCP", "UDP")
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

    def address(self):                       # kube-proxy's BaseEndpointInfo.String()
        return f"{self.ip}:{self.port}"


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


def _ipv4(value, where):
    try:
        return str(ipaddress.IPv4Address(value))
    except (ipaddress.AddressValueError, ValueError, TypeError):
        raise DescriptionError(f"{where}: {value!r} is not an IPv4 address") from None


def _cidr(value, where):
    try:
        return str(ipaddress.IPv4Network(value, strict=True))
    except (ipaddress.AddressValueError, ipaddress.NetmaskValueError, ValueError, TypeError):
        raise DescriptionError(f"{where}: {value!r} is not an IPv4 CIDR") from None


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


def parse(doc):
    """Validates a description (parsed JSON) and returns a Description."""
    _keys(doc, "description", ["clusterCIDR", "services"], ["serviceCIDRs"])
    cluster_cidr = _cidr(doc["clusterCIDR"], "clusterCIDR")
    cidrs = doc.get("serviceCIDRs", [])
    if not isinstance(cidrs, list):
        raise DescriptionError("serviceCIDRs: expected a list")
    service_cidrs = tuple(_cidr(c, f"serviceCIDRs[{i}]") for i, c in enumerate(cidrs))
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
        ip = _ipv4(svc["clusterIP"], f"{where}: clusterIP")
        if ip in cluster_ips:
            raise DescriptionError(f"{where}: clusterIP {ip} is already service {cluster_ips[ip]}'s")
        cluster_ips[ip] = f"{ns}/{name}"
        kind = _choice(svc.get("type", "ClusterIP"), f"{where}: type", ("ClusterIP", "NodePort"))
        if "externalTrafficPolicy" in svc and kind != "NodePort":
            raise DescriptionError(f"{where}: externalTrafficPolicy is only for type NodePort")
        local = _choice(svc.get("externalTrafficPolicy", "Cluster"), f"{where}: externalTrafficPolicy",
                        ("Cluster", "Local")) == "Local"
        ports.extend(_service_ports(svc, where, ns, name, ip, kind, local, node_ports))
    return Description(cluster_cidr, service_cidrs, tuple(ports))


def _service_ports(svc, where, ns, name, ip, kind, local, node_ports):
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
        endpoints = tuple(_endpoint(e, f"{where}: endpoints[{k}]", names, pname, target)
                          for k, e in enumerate(eps))
        out.append(ServicePort(ns, name, pname, proto.lower(), ip, port, node_port, local, endpoints))
    return out


def _endpoint(e, where, port_names, pname, target):
    _keys(e, where, ["ip", "node"], ["hostNetwork", "ports"])
    ip = _ipv4(e["ip"], f"{where}.ip")
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
    return Endpoint(ip, port, e["node"], host)
