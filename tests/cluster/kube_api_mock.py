#!/usr/bin/env python3
"""Just enough of the Kubernetes API server for kovs-agent's peer source.

footprint_bench.sh runs it in the cluster's underlay namespace so that agents
with `peers: {source: kubernetes}` can be measured the way kind users run
them: HTTPS (the agent loads and initialises OpenSSL), bearer-token auth, a
v1 NodeList, then a chunked watch that carries only bookmarks.

  GET /api/v1/nodes
      a v1 NodeList of the nodes in --peers (the peers file the bench
      writes). Each Node is shaped and sized like one of kind's (labels,
      annotations, managedFields, conditions, images, nodeInfo) unless
      --node-shape minimal, because the agent parses the whole list at once
      and its size is part of the footprint.
  GET /api/v1/nodes?watch=true&resourceVersion=N[&allowWatchBookmarks=true][&timeoutSeconds=T]
      Transfer-Encoding: chunked, one BOOKMARK event every
      --bookmark-interval seconds (with allowWatchBookmarks), closed cleanly
      after timeoutSeconds as the real server does, or when the client goes.

A request without `Authorization: Bearer <the token>` gets the API server's
401 Status. Everything else is a 404 or 405 Status. Standard library only.
"""

import argparse
import json
import os
import re
import signal
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PEER_LINES = (
    re.compile(r"- name: (?P<name>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)"),
    re.compile(r"  nodeIP: (?P<ip>[0-9a-fA-F.:]+)"),
    re.compile(r"  podCIDRs: \[(?P<cidrs>[^\]]*)\]"),
)


def read_peers(path):
    """The peers file as write_peers (tests/cluster/lib/cluster-common.sh) writes it:
    three lines per peer. Anything else is an error, not a guess."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not lines or len(lines) % 3:
        sys.exit(f"kube_api_mock: {path}: expected 3 lines per peer, got {len(lines)} lines")
    peers = []
    for i in range(0, len(lines), 3):
        m = [rx.fullmatch(line) for rx, line in zip(PEER_LINES, lines[i:i + 3])]
        if not all(m):
            sys.exit(f"kube_api_mock: {path}:{i + 1}: not a peer entry: {lines[i:i + 3]}")
        cidrs = [c.strip() for c in m[2]["cidrs"].split(",") if c.strip()]
        peers.append((m[0]["name"], m[1]["ip"], cidrs))
    return peers


def kind_node(name, ip, cidrs, rv, index):
    """A Node as kind v0.20 / Kubernetes 1.27 serialises a worker."""
    stamp = "2026-11-30T08:00:%02dZ" % (index % 60)
    uid = "5f0c%04x-1d2e-4c3b-9a8f-%012x" % (index, index * 7919)
    kib = {"cpu": "8", "ephemeral-storage": "102626232Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
           "memory": "32803380Ki", "pods": "110"}

    def condition(kind, status, reason, message):
        return {"lastHeartbeatTime": stamp, "lastTransitionTime": stamp, "message": message,
                "reason": reason, "status": status, "type": kind}

    images = [
        (["docker.io/library/import-2023-06-15@sha256:" + "%064x" % (index * 31 + k),
          "registry.k8s.io/%s:v1.27.3" % image], size)
        for k, (image, size) in enumerate([("kube-apiserver", 83460163), ("kube-controller-manager", 74420390),
                                           ("kube-proxy", 72713386), ("kube-scheduler", 59808858)])
    ] + [
        (["registry.k8s.io/etcd:3.5.7-0"], 101639218),
        (["docker.io/kindest/kindnetd:v20230511-dc714da8"], 27731571),
        (["docker.io/kindest/local-path-provisioner:v20230511-dc714da8"], 19351145),
        (["registry.k8s.io/coredns/coredns:v1.10.1"], 16190758),
        (["docker.io/kindest/local-path-helper:v20230510-486859a6"], 3052318),
        (["registry.k8s.io/pause:3.7"], 311278),
    ]
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": uid,
            "resourceVersion": rv,
            "creationTimestamp": stamp,
            "labels": {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
            "annotations": {"kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
                            "node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "managedFields": [
                {"manager": "kubeadm", "operation": "Update", "apiVersion": "v1", "time": stamp,
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:annotations": {
                     "f:kubeadm.alpha.kubernetes.io/cri-socket": {}}}}},
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": stamp,
                 "fieldsType": "FieldsV1", "fieldsV1": {
                     "f:metadata": {"f:annotations": {"f:node.alpha.kubernetes.io/ttl": {}}},
                     "f:spec": {"f:podCIDR": {}, "f:podCIDRs": {".": {}, **{'v:"%s"' % c: {} for c in cidrs}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": stamp,
                 "fieldsType": "FieldsV1", "fieldsV1": {
                     "f:metadata": {"f:annotations": {".": {}, "f:volumes.kubernetes.io/controller-managed-attach-detach": {}},
                                    "f:labels": {".": {}, **{"f:" + k: {} for k in (
                                        "beta.kubernetes.io/arch", "beta.kubernetes.io/os", "kubernetes.io/arch",
                                        "kubernetes.io/hostname", "kubernetes.io/os")}}},
                     "f:spec": {"f:providerID": {}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": stamp,
                 "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": {"f:status": {
                     "f:conditions": {'k:{"type":"%s"}' % t: {"f:lastHeartbeatTime": {}, "f:lastTransitionTime": {},
                                                              "f:message": {}, "f:reason": {}, "f:status": {}}
                                      for t in ("DiskPressure", "MemoryPressure", "PIDPressure", "Ready")},
                     "f:images": {}, "f:nodeInfo": {"f:bootID": {}}}}},
            ],
        },
        "spec": {"podCIDR": cidrs[0] if cidrs else "", "podCIDRs": cidrs,
                 "providerID": "kind://docker/kind/" + name},
        "status": {
            "capacity": kib,
            "allocatable": kib,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "%032x" % (index * 104729), "systemUUID": uid, "bootID": uid,
                         "kernelVersion": "6.1.0-13-amd64", "osImage": "Debian GNU/Linux 11 (bullseye)",
                         "containerRuntimeVersion": "containerd://1.7.1", "kubeletVersion": "v1.27.3",
                         "kubeProxyVersion": "v1.27.3", "operatingSystem": "linux", "architecture": "amd64"},
            "images": [{"names": names, "sizeBytes": size} for names, size in images],
        },
    }


def minimal_node(name, ip, cidrs, rv, _index):
    return {"kind": "Node", "apiVersion": "v1",
            "metadata": {"name": name, "resourceVersion": rv},
            "spec": {"podCIDR": cidrs[0] if cidrs else "", "podCIDRs": cidrs},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}]}}


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Api:
    def __init__(self, peers, shape, token, bookmark_interval):
        make = kind_node if shape == "kind" else minimal_node
        self.token = token
        self.bookmark_interval = bookmark_interval
        nodes = [make(name, ip, cidrs, str(1000 + 10 * i), i) for i, (name, ip, cidrs) in enumerate(peers)]
        self.lock = threading.Lock()
        self.rv = 1000 + 10 * len(peers)
        self.node_list = json.dumps({"kind": "NodeList", "apiVersion": "v1",
                                     "metadata": {"resourceVersion": str(self.rv)}, "items": nodes},
                                    separators=(",", ":")).encode()

    def next_rv(self):
        # Other objects (leases, events) move the cluster's resourceVersion on,
        # so a real bookmark carries a newer one than the list did.
        with self.lock:
            self.rv += 1
            return str(self.rv)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-api-mock"
    sys_version = ""

    def log_message(self, fmt, *args):
        self.server.log(f"{self.client_address[0]} {fmt % args}")

    def send_json(self, code, obj):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self):
        self.close_connection = True
        api = self.server.api
        if self.headers.get("Authorization") != "Bearer " + api.token:
            self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
            return
        url = urlsplit(self.path)
        if url.path != "/api/v1/nodes":
            self.send_json(404, status(404, "NotFound", "the server could not find the requested resource"))
            return
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if query.get("watch") in ("true", "1"):
            self.watch(api, query)
        else:
            self.list(api)

    def do_POST(self):
        self.close_connection = True
        self.send_json(405, status(405, "MethodNotAllowed", "the server does not allow this method"))

    do_PUT = do_PATCH = do_DELETE = do_POST

    def list(self, api):
        # Chunked, like the real server for any list larger than its buffer.
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        body = api.node_list
        for i in range(0, len(body), 32768):
            self.chunk(body[i:i + 32768])
        self.wfile.write(b"0\r\n\r\n")

    def watch(self, api, query):
        rv, timeout = query.get("resourceVersion", ""), query.get("timeoutSeconds", "")
        if not rv.isdigit() or (timeout and not timeout.isdigit()):
            self.send_json(400, status(400, "BadRequest", f"bad resourceVersion '{rv}' or timeoutSeconds '{timeout}'"))
            return
        if int(rv) > api.rv:
            self.send_json(504, status(504, "Timeout", f"Too large resource version: {rv}, current: {api.rv}"))
            return
        bookmarks = query.get("allowWatchBookmarks") == "true"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        end = time.monotonic() + (int(timeout) if timeout else 1800)
        sent = 0
        try:
            while not self.server.stopping.wait(min(api.bookmark_interval, max(0.0, end - time.monotonic()))):
                if time.monotonic() >= end:
                    break
                if bookmarks:
                    event = {"type": "BOOKMARK", "object": {"kind": "Node", "apiVersion": "v1",
                                                            "metadata": {"resourceVersion": api.next_rv()}}}
                    self.chunk(json.dumps(event, separators=(",", ":")).encode() + b"\n")
                    sent += 1
            self.wfile.write(b"0\r\n\r\n")
            self.server.log(f"{self.client_address[0]} watch ended after {sent} bookmarks (timeoutSeconds)")
        except (OSError, ssl.SSLError) as e:
            self.server.log(f"{self.client_address[0]} watch ended after {sent} bookmarks: client gone ({e})")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr, api, context, log):
        self.api, self.context, self.logfile = api, context, log
        self.stopping = threading.Event()
        super().__init__(addr, Handler)

    def log(self, line):
        print(time.strftime("%H:%M:%S"), line, file=self.logfile, flush=True)

    def finish_request(self, request, client_address):
        # The TLS handshake here, on the request's own thread: a client that
        # stalls in it must not stop the accept loop.
        request.settimeout(30)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as e:
            self.log(f"{client_address[0]} TLS handshake failed: {e}")
            return
        tls.settimeout(None)
        super().finish_request(tls, client_address)


def watch_parent(pid, server):
    # Gone with the benchmark even when it was killed too hard to clean up.
    while not server.stopping.wait(1):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            server.log(f"parent {pid} gone, exiting")
            os.kill(os.getpid(), signal.SIGTERM)
            return


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", required=True, help="address to listen on")
    p.add_argument("--port", type=int, default=6443)
    p.add_argument("--cert", required=True, help="PEM certificate")
    p.add_argument("--key", required=True, help="PEM private key")
    p.add_argument("--token-file", required=True, help="file holding the bearer token clients must send")
    p.add_argument("--peers", required=True, help="peers file (write_peers format) to serve as Nodes")
    p.add_argument("--node-shape", choices=("kind", "minimal"), default="kind")
    p.add_argument("--bookmark-interval", type=float, default=5.0, help="seconds between BOOKMARK events")
    p.add_argument("--ready-file", help="written once the socket listens")
    p.add_argument("--parent", type=int, help="exit when this process is gone")
    p.add_argument("--log", help="request log (default stderr)")
    a = p.parse_args()

    try:
        with open(a.token_file, encoding="utf-8") as f:
            token = f.read().strip()
        if not token:
            sys.exit(f"kube_api_mock: {a.token_file}: empty token")
        api = Api(read_peers(a.peers), a.node_shape, token, a.bookmark_interval)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(a.cert, a.key)
        log = open(a.log, "a", encoding="utf-8") if a.log else sys.stderr  # open for the process's life
        Server.address_family = socket.AF_INET6 if ":" in a.listen else socket.AF_INET
        server = Server((a.listen, a.port), api, context, log)
    except (OSError, ssl.SSLError) as e:
        sys.exit(f"kube_api_mock: {e}")

    def stop(*_):
        server.stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if a.parent:
        threading.Thread(target=watch_parent, args=(a.parent, server), daemon=True).start()
    server.log(f"listening on {a.listen}:{a.port}, {len(api.node_list) // 1024} KiB NodeList "
               f"({a.node_shape} nodes), bookmark every {a.bookmark_interval} s")
    if a.ready_file:
        with open(a.ready_file + ".tmp", "w", encoding="utf-8") as f:
            f.write(f"{len(api.node_list)}\n")
        os.rename(a.ready_file + ".tmp", a.ready_file)
    server.serve_forever(poll_interval=0.5)
    server.server_close()


if __name__ == "__main__":
    main()
