"""Chain names hashed the way kube-proxy v1.31 hashes them, so a dump from a
test node reads like one from a kind node (KUBE-SVC-NPX46M4PTMTKRN6Y is the
`default/kubernetes:https` Service on every cluster)."""

import base64
import hashlib


def _b32_sha256(text):
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()


def iptables_chain(prefix, service_port_name, protocol):
    """KUBE-SVC-/KUBE-SVL-/KUBE-EXT-/KUBE-FW- + 16 characters (portProtoHash)."""
    return prefix + _b32_sha256(service_port_name + protocol)[:16]


def iptables_endpoint_chain(service_port_name, protocol, endpoint):
    """KUBE-SEP- + 16 characters of the hash of the service port and the
    endpoint as BaseEndpointInfo.String() gives it: "ip:port", "[ip6]:port"."""
    return "KUBE-SEP-" + _b32_sha256(service_port_name + protocol + endpoint)[:16]


# nftables: "HASH-namespace/name/protocol/port" (hashAndTruncate; our names are
# far below the 240-character limit, so nothing is ever truncated).
def _hash_prefixed(name):
    return _b32_sha256(name)[:8] + "-" + name


def nft_service_base(namespace, service, protocol, port_name):
    return _hash_prefixed(f"{namespace}/{service}/{protocol}/{port_name}")


# servicePortEndpointChainNameBase splits BaseEndpointInfo.String() back into
# ip and port, and writes an IPv6 address's colons (not allowed in a chain
# name) as dots: "...__fd00.10.180..1/80".
def nft_endpoint_base(namespace, service, protocol, port_name, ip, port):
    ip = ip.replace(":", ".")
    return _hash_prefixed(f"{namespace}/{service}/{protocol}/{port_name}__{ip}/{port}")
