#!/usr/bin/env python3
"""Just enough of the Kubernetes API server for kovs: Nodes, and the Namespaces,
Pods and NetworkPolicies that NetworkPolicy enforcement reads.

Used by footprint_bench.sh (agents with `peers: {source: kubernetes}`, measured
the way kind users run them) and by the kind-node provider of tests/cluster
(kind-node-cluster.sh), where kovs-node-init (the init container) reads its own
Node's podCIDR and the agent's Kubernetes peer source lists and watches the
Nodes. HTTPS with a certificate the clients are given the CA of, bearer-token
auth, the real server's JSON shapes and status codes:

  GET /api/v1/nodes
      a v1 NodeList of the nodes in --peers (the peers file that write_peers in
      tests/cluster/lib/cluster-common.sh writes). Each Node is shaped and sized
      like one of kind's (labels, annotations, managedFields, conditions,
      images, nodeInfo) unless --node-shape minimal, with spec.podCIDR(s) and an
      InternalIP address; chunked, as the real server sends large lists.
  GET /api/v1/nodes/NAME
      that Node, or the real server's 404 NotFound Status.
  GET /api/v1/nodes?watch=true&resourceVersion=N[&allowWatchBookmarks=true][&timeoutSeconds=T]
      Transfer-Encoding: chunked: the ADDED / MODIFIED / DELETED events after
      resourceVersion N (with --watch-peers: nodes join and leave when the
      peers file changes, each change a new resourceVersion), a BOOKMARK every
      --bookmark-interval seconds (with allowWatchBookmarks), closed cleanly
      after timeoutSeconds as the real server does, or when the client goes.
      resourceVersion 0 starts with an ADDED event per node; a version older
      than the oldest event kept gets the real server's 410 Gone ERROR event.

With --objects DIR, also the pods and ConfigMaps a kubelet reads, from JSON
files DIR/<namespace>/<pods|configmaps>/<name>.json that the caller writes
(renamed into place) and removes: the kind-node provider's stand-in for the
DaemonSet controller creates and deletes its pods there
(tests/cluster/lib/kind-node-lifecycle.sh), and its kubelet runner reads them
over the node's network as kubelet does:

  GET /api/v1/pods?fieldSelector=spec.nodeName=NAME
      a v1 PodList of the pods bound to that node (kubelet's list; it then
      watches, the runner lists again instead).
  GET /api/v1/namespaces/NS/configmaps/NAME
      that ConfigMap (configMap volumes), or the real server's 404.

Namespaces, Pods and NetworkPolicies as the tests write them, for the
agents' NetworkPolicy informers (list and watch, like the Nodes; the objects
get resourceVersion, uid and creationTimestamp, Namespaces the
kubernetes.io/metadata.name label and Pods kubelet's and kubectl's
managedFields, about 3 KiB, as the real server returns them):

  GET  /api/v1/namespaces, /api/v1/pods, /apis/networking.k8s.io/v1/networkpolicies
      the list, or with watch=true the events, as for the Nodes above (pods:
      also those of --objects in the list, and fieldSelector spec.nodeName).
  POST /api/v1/namespaces, /api/v1/namespaces/NS/pods,
       /apis/networking.k8s.io/v1/namespaces/NS/networkpolicies
      create (409 AlreadyExists; 404 for a namespace that does not exist).
  PUT, PATCH (JSON merge patch, as `kubectl label` sends), DELETE on .../NAME
      replace, patch, delete (404 NotFound), each one watch event.
  --preload FILE holds a JSON list of such objects from the start (the
  footprint benchmark's 1000 Pods and 200 NetworkPolicies).

With --admin-network-policy, the policy API's cluster-scoped resources too,
as if their CRDs were installed (without it they are 404, as on a cluster
without them):

  GET  /apis/policy.networking.k8s.io/v1alpha1/adminnetworkpolicies,
       .../baselineadminnetworkpolicies    the list, or the events
  POST the same paths; PUT, PATCH, DELETE on .../NAME

A request without `Authorization: Bearer <the token>` gets the API server's 401
Status; other paths 404, other methods 405.

Signals, for the soak test (tests/soak/soak.sh): SIGUSR2 drops every open
watch mid-stream, as a restarting API server or a lost connection does (the
clients watch again from their resourceVersion); SIGUSR1 also compacts the
event history first, as etcd does, so that every client's next watch gets the
410 Gone ERROR event and must list again.

Left out of the real API: every other resource (no DaemonSets, Services,
leases, events), admission and validation beyond the name (a NetworkPolicy
the real server would refuse is stored as sent: the agents' decoders are what
it tests), strategic merge patch, label selectors and every field selector but
spec.nodeName on pods, pagination (limit/continue), protobuf and table output,
RBAC and real token review (one shared token stands for every service
account), and resource versions other objects would move on (bookmarks stand
in for those).
Standard library only. The Node objects' shapes are kube_node_shapes.py; the
rest (the store of events, the handler, the server) shares one lock and one
resourceVersion and is kept in this one file.
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

from kube_node_shapes import kind_node, minimal_node

PEER_LINES = (
    re.compile(r"- name: (?P<name>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)"),
    re.compile(r"  nodeIPs?: \[?(?P<ips>[0-9a-fA-F.:', ]+)\]?"),
    re.compile(r"  podCIDRs: \[(?P<cidrs>[^\]]*)\]"),
)


# Resources the tests write (create, label, delete) and the agents list and
# watch: resource -> (kind, apiVersion).
WRITABLE = {"namespaces": ("Namespace", "v1"), "pods": ("Pod", "v1"),
            "networkpolicies": ("NetworkPolicy", "networking.k8s.io/v1"),
            "adminnetworkpolicies": ("AdminNetworkPolicy", "policy.networking.k8s.io/v1alpha1"),
            "baselineadminnetworkpolicies": ("BaselineAdminNetworkPolicy", "policy.networking.k8s.io/v1alpha1")}
# The policy API's cluster-scoped resources, served only with
# --admin-network-policy (as if its CRDs were installed; else 404, as a
# cluster without them answers).
POLICY_API = "/apis/policy.networking.k8s.io/v1alpha1"
ADMIN = ("adminnetworkpolicies", "baselineadminnetworkpolicies")
NAME = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?"


def kind_of(resource):
    """(kind, apiVersion) of a resource this server serves: the Nodes, or one of WRITABLE."""
    return WRITABLE.get(resource, ("Node", "v1"))


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch (kubectl label/annotate send one)."""
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


def pod_managed_fields(pod):
    """managedFields as kubelet and kube-controller-manager leave them on a
    running Pod: about 3 KiB of fieldsV1 the agents must skip while parsing."""
    containers = {f'k:{{"name":"{c.get("name", "c")}"}}': {
        ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
        "f:ports": {f'k:{{"containerPort":{p.get("containerPort", 0)},"protocol":"{p.get("protocol", "TCP")}"}}':
                    {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}
                    for p in c.get("ports", [])},
        "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}
        for c in pod.get("spec", {}).get("containers", [])}
    status_fields = {"f:conditions": {f'k:{{"type":"{t}"}}': {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {},
                                                             "f:status": {}, "f:type": {}}
                                      for t in ("ContainersReady", "Initialized", "PodReadyToStartContainers",
                                                "PodScheduled", "Ready")},
                     "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {},
                     "f:podIPs": {".": {}, 'k:{"ip":"x"}': {".": {}, "f:ip": {}}}, "f:startTime": {}}
    return [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": "2026-12-03T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}}},
                                                   "f:spec": {"f:containers": containers, "f:dnsPolicy": {},
                                                              "f:enableServiceLinks": {}, "f:restartPolicy": {},
                                                              "f:schedulerName": {}, "f:securityContext": {},
                                                              "f:terminationGracePeriodSeconds": {}}}},
            {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-12-03T00:00:01Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": status_fields}, "subresource": "status"}]


def read_peers(path):
    """The peers file as write_peers (tests/cluster/lib/cluster-common.sh) writes it:
    three lines per peer (nodeIP, or nodeIPs for a node of both families: its
    InternalIPs). Anything else is an error, not a guess."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if len(lines) % 3:
        raise ValueError(f"{path}: expected 3 lines per peer, got {len(lines)} lines")
    peers = []
    for i in range(0, len(lines), 3):
        m = [rx.fullmatch(line) for rx, line in zip(PEER_LINES, lines[i:i + 3])]
        if not all(m):
            raise ValueError(f"{path}:{i + 1}: not a peer entry: {lines[i:i + 3]}")
        cidrs = [c.strip() for c in m[2]["cidrs"].split(",") if c.strip()]
        ips = tuple(ip.strip(" '") for ip in m[1]["ips"].split(",") if ip.strip(" '"))
        peers.append((m[0]["name"], ips, cidrs))
    return peers


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Api:
    """The Nodes, their resourceVersions and the events that changed them."""

    def __init__(self, peers, shape, token, bookmark_interval, objects=None, admin_policy=False):
        self.make = kind_node if shape == "kind" else minimal_node
        self.admin_policy = admin_policy
        self.objects = objects
        self.token = token
        self.bookmark_interval = bookmark_interval
        self.changed = threading.Condition()
        self.rv = 1000
        self.nodes = {}      # name -> (peer tuple, Node object)
        self.events = []     # (resourceVersion, type, object, resource), oldest first
        self.store = {r: {} for r in WRITABLE}  # resource -> key ("ns/name" or "name") -> object
        self.generation = 0  # bumped by drop_watches: every open watch ends
        self.index = 0       # nodes added, for their uids and creationTimestamps
        self.created = {}    # name -> its index when it was added
        self.commits = None  # --commit-log: "resourceVersion unix-ms" of each write, when its watchers are woken
        self.update(peers)
        self.events.clear()  # the first nodes are the initial state, not events
        self.oldest = self.rv

    def update(self, peers):
        """Takes the peers file's new contents: one event per node that joined,
        changed or left, each with a resourceVersion of its own."""
        with self.changed:
            wanted = {name: (name, ips, cidrs) for name, ips, cidrs in peers}
            for name in [n for n in self.nodes if n not in wanted]:
                self.rv += 1
                _, node = self.nodes.pop(name)
                del self.created[name]
                gone = json.loads(json.dumps(node))
                gone["metadata"]["resourceVersion"] = str(self.rv)
                self.events.append((self.rv, "DELETED", gone, "nodes"))
            for name, peer in wanted.items():
                if name in self.nodes and self.nodes[name][0] == peer:
                    continue
                self.rv += 1
                kind = "MODIFIED" if name in self.nodes else "ADDED"
                if kind == "ADDED":  # a Node keeps its uid and creationTimestamp through changes
                    self.created[name] = self.index
                    self.index += 1
                node = self.make(*peer, str(self.rv), self.created[name])
                self.nodes[name] = (peer, node)
                self.events.append((self.rv, kind, node, "nodes"))
            self.changed.notify_all()

    def drop_watches(self, compact):
        """Ends every open watch; with compact, the history goes too: any
        resourceVersion a client holds is then too old (410 Gone)."""
        with self.changed:
            if compact:
                self.rv += 1
                self.events.clear()
                self.oldest = self.rv + 1
            self.generation += 1
            self.changed.notify_all()

    def current(self, resource, match=None):
        """The objects of a resource now (with self.changed held)."""
        if resource == "nodes":
            return [node for _, node in self.nodes.values()]
        return [o for o in self.store[resource].values() if match is None or match(o)]

    def list_body(self, resource="nodes", match=None, extra=()):
        with self.changed:
            items = self.current(resource, match) + list(extra)
            kind, version = kind_of(resource)
            return json.dumps({"kind": kind + "List", "apiVersion": version,
                               "metadata": {"resourceVersion": str(self.rv)}, "items": items},
                              separators=(",", ":")).encode()

    def write(self, method, resource, namespace, name, body):
        """Create (POST), replace (PUT), merge-patch (PATCH) or delete an
        object as the real server does; returns (HTTP code, object or Status)."""
        kind, version = WRITABLE[resource]
        with self.changed:
            objects = self.store[resource]
            if method == "POST":
                name = (body.get("metadata") or {}).get("name", "")
            key = f"{namespace}/{name}" if namespace else name
            old = objects.get(key)
            if method == "POST" and old is not None:
                return 409, {**status(409, "AlreadyExists", f'{resource} "{name}" already exists'),
                             "details": {"name": name, "kind": resource}}
            if method != "POST" and old is None:
                return 404, {**status(404, "NotFound", f'{resource} "{name}" not found'),
                             "details": {"name": name, "kind": resource}}
            if method == "DELETE":
                del objects[key]
                self.rv += 1
                gone = json.loads(json.dumps(old))
                gone["metadata"]["resourceVersion"] = str(self.rv)
                self.events.append((self.rv, "DELETED", gone, resource))
                self.committed()
                return 200, gone
            obj = merge_patch(json.loads(json.dumps(old)), body) if method == "PATCH" else body
            if not isinstance(obj, dict) or not name or not re.fullmatch(NAME, name):
                return 422, status(422, "Invalid", f"{resource}: metadata.name must be a DNS-1123 name")
            meta = obj.setdefault("metadata", {})
            meta["name"] = name
            if namespace:
                meta["namespace"] = namespace
            obj["kind"], obj["apiVersion"] = kind, version
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            meta["uid"] = (old or {}).get("metadata", {}).get("uid") or f"00000000-0000-4000-8000-{self.rv:012d}"
            meta["creationTimestamp"] = (old or {}).get("metadata", {}).get("creationTimestamp") or \
                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            if resource == "namespaces":  # as the real server labels every namespace
                meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = name
            if resource == "pods":  # what makes kind's Pods a few KiB each
                meta["managedFields"] = pod_managed_fields(obj)
            objects[key] = obj
            self.events.append((self.rv, "ADDED" if old is None else "MODIFIED", obj, resource))
            self.committed()
            return 201 if method == "POST" else 200, obj

    def committed(self):
        """A write's event is in the history (self.changed held): its watchers
        are woken, and the moment is the "API event" benchmarks measure from."""
        if self.commits:
            print(self.rv, int(time.time() * 1000), file=self.commits, flush=True)
        self.changed.notify_all()

    def node(self, name):
        with self.changed:
            entry = self.nodes.get(name)
            return entry[1] if entry else None

    def next_rv(self):
        # Other objects (leases, events) move the cluster's resourceVersion on,
        # so a real bookmark carries a newer one than the list did.
        with self.changed:
            self.rv += 1
            return str(self.rv)


    def stored(self, namespace, resource, name=None):
        """The objects of --objects: one (name given) or all of a resource,
        in one namespace or (None) every namespace."""
        if not self.objects or not os.path.isdir(self.objects):
            return [] if name is None else None
        found = []
        for ns in [namespace] if namespace else sorted(os.listdir(self.objects)):
            d = os.path.join(self.objects, ns, resource)
            if name:
                names = [name + ".json"]
            elif os.path.isdir(d):
                names = sorted(f for f in os.listdir(d) if f.endswith(".json"))
            else:
                names = []
            for f in names:
                try:
                    with open(os.path.join(d, f), encoding="utf-8") as fh:
                        found.append(json.load(fh))
                except FileNotFoundError:
                    pass  # deleted meanwhile
        if name is not None:
            return found[0] if found else None
        return found


def watch_peers_file(path, api, server):
    """Re-reads the peers file whenever it changes (write_peers renames a
    complete file into place): nodes join and leave the API through it."""
    seen = None
    while not server.stopping.wait(0.2):
        try:
            st = os.stat(path)
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            if key == seen:
                continue
            seen = key
            before = api.rv
            api.update(read_peers(path))
            if api.rv != before:
                server.log(f"peers file changed: {len(api.nodes)} nodes, resourceVersion {api.rv}")
        except (OSError, ValueError) as e:
            server.log(f"peers file {path}: {e}; keeping the nodes as they were")


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
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        name = r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?)"
        if url.path == "/api/v1/pods":
            self.pods(api, query)
            return
        collections = {"/api/v1/namespaces": "namespaces", "/apis/networking.k8s.io/v1/networkpolicies": "networkpolicies"}
        if api.admin_policy:
            collections.update({f"{POLICY_API}/{r}": r for r in ADMIN})
        if url.path in collections:
            if query.get("watch") in ("true", "1"):
                self.watch(api, query, collections[url.path])
            else:
                self.list(api, collections[url.path])
            return
        m = re.fullmatch(rf"/api/v1/namespaces/{name}/configmaps/{name}", url.path)
        if m:
            cm = api.stored(m[1], "configmaps", m[3])
            if cm is None:
                self.send_json(404, {**status(404, "NotFound", f'configmaps "{m[3]}" not found'),
                                     "details": {"name": m[3], "kind": "configmaps"}})
            else:
                self.send_json(200, cm)
            return
        m = re.fullmatch(rf"/api/v1/nodes/{name}", url.path)
        if m:
            node = api.node(m[1])
            if node is None:
                self.send_json(404, {**status(404, "NotFound", f'nodes "{m[1]}" not found'),
                                     "details": {"name": m[1], "kind": "nodes"}})
            else:
                self.send_json(200, node)
            return
        if url.path != "/api/v1/nodes":
            self.send_json(404, status(404, "NotFound", "the server could not find the requested resource"))
            return
        if query.get("watch") in ("true", "1"):
            self.watch(api, query)
        else:
            self.list(api)

    def do_POST(self):
        self.close_connection = True
        api = self.server.api
        if self.headers.get("Authorization") != "Bearer " + api.token:
            self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
            return
        path = urlsplit(self.path).path
        m = (re.fullmatch(rf"/api/v1/(namespaces)(?:/({NAME}))?", path) or
             re.fullmatch(rf"/api/v1/namespaces/({NAME})/(pods)(?:/({NAME}))?", path) or
             re.fullmatch(rf"/apis/networking.k8s.io/v1/namespaces/({NAME})/(networkpolicies)(?:/({NAME}))?", path))
        admin = re.fullmatch(rf"{POLICY_API}/({'|'.join(ADMIN)})(?:/({NAME}))?", path) if api.admin_policy else None
        if admin:
            resource, namespace, name = admin[1], None, admin[2]
        elif not m:
            self.send_json(405, status(405, "MethodNotAllowed", "the server does not allow this method"))
            return
        elif m.re.pattern.startswith("/api/v1/(namespaces)"):
            resource, namespace, name = "namespaces", None, m[2]
        else:
            resource, namespace, name = m[3], m[1], m[4]
        if (self.command == "POST") != (name is None):
            self.send_json(405, status(405, "MethodNotAllowed", f"{self.command} {path}"))
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else {}
        except ValueError as e:
            self.send_json(400, status(400, "BadRequest", f"the body is not JSON: {e}"))
            return
        if namespace and self.command == "POST" and namespace not in api.store["namespaces"]:
            self.send_json(404, status(404, "NotFound", f'namespaces "{namespace}" not found'))
            return
        code, obj = api.write(self.command, resource, namespace, name, body)
        self.send_json(code, obj)

    do_PUT = do_PATCH = do_DELETE = do_POST

    def pods(self, api, query):
        selector = query.get("fieldSelector", "")
        node = selector[len("spec.nodeName="):] if selector.startswith("spec.nodeName=") else None
        if selector and node is None:
            self.send_json(400, status(400, "BadRequest", f"not implemented here: fieldSelector '{selector}'"))
            return
        match = None if node is None else (lambda p: p.get("spec", {}).get("nodeName") == node)
        if query.get("watch") in ("true", "1"):
            self.watch(api, query, "pods", match)
            return
        # The pods the tests wrote, and those of --objects (the kind-node provider's kubelet runner's).
        files = [p for p in api.stored(None, "pods") if match is None or match(p)]
        self.send_json(200, json.loads(api.list_body("pods", match, files)))

    def list(self, api, resource="nodes"):
        # Chunked, like the real server for any list larger than its buffer.
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        body = api.list_body(resource)
        for i in range(0, len(body), 32768):
            self.chunk(body[i:i + 32768])
        self.wfile.write(b"0\r\n\r\n")

    def watch(self, api, query, resource="nodes", match=None):
        rv, timeout = query.get("resourceVersion", "0") or "0", query.get("timeoutSeconds", "")
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
        sent = {"events": 0, "bookmarks": 0}

        def send(kind, obj):
            self.chunk(json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n")

        try:
            last = int(rv)
            generation = api.generation
            if last == 0:
                # "Any version": the current state as ADDED events, then changes.
                with api.changed:
                    current, last = api.current(resource, match), api.rv
                for node in current:
                    send("ADDED", node)
                    sent["events"] += 1
            elif last < api.oldest:
                send("ERROR", status(410, "Expired", f"too old resource version: {last} ({api.oldest})"))
                self.wfile.write(b"0\r\n\r\n")
                return
            next_bookmark = time.monotonic() + api.bookmark_interval
            while not self.server.stopping.is_set():
                now = time.monotonic()
                if now >= end:
                    break
                if api.generation != generation:
                    # Dropped: no closing chunk, as when the connection is cut.
                    self.server.log(f"{self.client_address[0]} watch dropped after {sent['events']} events")
                    self.close_connection = True
                    return
                with api.changed:
                    pending = [e for e in api.events if e[0] > last]
                    if not pending:
                        api.changed.wait(min(end, next_bookmark) - now)
                        pending = [e for e in api.events if e[0] > last]
                for erv, kind, obj, of in pending:
                    last = erv
                    if of != resource or (match and not match(obj)):
                        continue
                    send(kind, obj)
                    sent["events"] += 1
                if bookmarks and time.monotonic() >= next_bookmark:
                    kind, version = kind_of(resource)
                    send("BOOKMARK", {"kind": kind, "apiVersion": version, "metadata": {"resourceVersion": api.next_rv()}})
                    sent["bookmarks"] += 1
                    next_bookmark = time.monotonic() + api.bookmark_interval
            self.wfile.write(b"0\r\n\r\n")
            self.server.log(f"{self.client_address[0]} watch ended after {sent['events']} events, "
                            f"{sent['bookmarks']} bookmarks (timeoutSeconds)")
        except (OSError, ssl.SSLError) as e:
            self.server.log(f"{self.client_address[0]} watch ended after {sent['events']} events, "
                            f"{sent['bookmarks']} bookmarks: client gone ({e})")


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
    p.add_argument("--watch-peers", action="store_true",
                   help="follow changes of the peers file: nodes join and leave, watchers get the events")
    p.add_argument("--node-shape", choices=("kind", "minimal"), default="kind")
    p.add_argument("--objects", help="directory of pods and ConfigMaps to serve (<ns>/<resource>/<name>.json)")
    p.add_argument("--preload", help="JSON list of Namespaces, Pods, NetworkPolicies (and admin policies) to hold from the start")
    p.add_argument("--admin-network-policy", action="store_true",
                   help="serve AdminNetworkPolicies and the BaselineAdminNetworkPolicy (as if their CRDs were installed)")
    p.add_argument("--bookmark-interval", type=float, default=5.0, help="seconds between BOOKMARK events")
    p.add_argument("--ready-file", help="written once the socket listens")
    p.add_argument("--parent", type=int, help="exit when this process is gone")
    p.add_argument("--log", help="request log (default stderr)")
    p.add_argument("--commit-log", help='one line per write from now on: "<resourceVersion> <unix ms>" as its event is sent')
    a = p.parse_args()

    try:
        with open(a.token_file, encoding="utf-8") as f:
            token = f.read().strip()
        if not token:
            sys.exit(f"kube_api_mock: {a.token_file}: empty token")
        api = Api(read_peers(a.peers), a.node_shape, token, a.bookmark_interval, a.objects, a.admin_network_policy)
        if a.preload:
            kinds = {kind: resource for resource, (kind, _) in WRITABLE.items()}
            with open(a.preload, encoding="utf-8") as f:
                for obj in json.load(f):
                    meta = obj.get("metadata", {})
                    resource = kinds.get(obj.get("kind"))
                    if resource is None:
                        raise ValueError(f"--preload: kind {obj.get('kind')!r} is not one of {sorted(kinds)}")
                    code, reply = api.write("POST", resource, meta.get("namespace") if resource not in ("namespaces",) + ADMIN else None,
                                            None, obj)
                    if code != 201:
                        raise ValueError(f"--preload: {meta.get('name')}: {reply.get('message')}")
            api.events.clear()  # the initial state, not events
            api.oldest = api.rv
        if a.commit_log:
            api.commits = open(a.commit_log, "a", encoding="utf-8")  # open for the process's life
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(a.cert, a.key)
        log = open(a.log, "a", encoding="utf-8") if a.log else sys.stderr  # open for the process's life
        Server.address_family = socket.AF_INET6 if ":" in a.listen else socket.AF_INET
        server = Server((a.listen, a.port), api, context, log)
    except (OSError, ssl.SSLError, ValueError) as e:
        sys.exit(f"kube_api_mock: {e}")

    def stop(*_):
        server.stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def drop(compact):
        def handler(*_):
            server.log("compacted; dropping every watch" if compact else "dropping every watch")
            threading.Thread(target=api.drop_watches, args=(compact,), daemon=True).start()
        return handler

    signal.signal(signal.SIGUSR1, drop(True))
    signal.signal(signal.SIGUSR2, drop(False))
    if a.parent:
        threading.Thread(target=watch_parent, args=(a.parent, server), daemon=True).start()
    if a.watch_peers:
        threading.Thread(target=watch_peers_file, args=(a.peers, api, server), daemon=True).start()
    size = len(api.list_body())
    server.log(f"listening on {a.listen}:{a.port}, {size // 1024} KiB NodeList "
               f"({a.node_shape} nodes), bookmark every {a.bookmark_interval} s")
    if a.ready_file:
        with open(a.ready_file + ".tmp", "w", encoding="utf-8") as f:
            f.write(f"{size}\n")
        os.rename(a.ready_file + ".tmp", a.ready_file)
    server.serve_forever(poll_interval=0.5)
    server.server_close()


if __name__ == "__main__":
    main()
