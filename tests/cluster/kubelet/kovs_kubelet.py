#!/usr/bin/env python3
"""A kubelet-shaped runner: the pods the API server binds to this node, run through containerd.

  kovs_kubelet.py --node NAME --api-server https://HOST:PORT --api-token F --api-ca F
                  --dir DIR --service-host IP --service-port PORT

Test harness, not product (tests/cluster/lib/kind-node-cluster.sh starts it in
every node, and the node starts it again when it boots, as kind's nodes run
kubelet). Like kubelet it:
  - lists its pods from the API server, over the node's own network
    (GET /api/v1/pods?fieldSelector=spec.nodeName=NAME every LIST_INTERVAL;
    kubelet lists once and then watches, which tells it within milliseconds),
    and the ConfigMaps they mount; while the API server cannot be reached it
    keeps running what it has and says so;
  - starts a pod worker (pod_worker.py) for every pod that appears, and
    deletes every pod that is gone from the list: its containers stopped with
    the grace period, then its sandbox;
  - at start, removes the containers and sandboxes of its last run (a node
    that rebooted has their records but not their tasks), as kubelet's
    garbage collection does, and runs the pods the API server still binds
    to it again, from their init containers on.
Only pods a controller owns are run (the DaemonSets' stand-in makes them): a
Pod object without one is the API's record of a pod a test runs itself through
`ctr run --cni` (the NetworkPolicy e2e's x/y/z pods), which this runner leaves
alone. The pods' fields were checked against what pod_worker.py implements when the
manifests were rendered (manifests.py); the API server here is
tests/cluster/kube_api_mock.py, fed by the stand-in for the DaemonSet
controller (tests/cluster/lib/kind-node-lifecycle.sh).

Status: each pod's (kubelet's PodStatus, as JSON) in DIR/pods/<uid>/status.json,
and the newest pod's also in DIR/status.json; events in DIR/kubelet.log.

Not emulated: pod status written back to the API server (the status files
stand for it), watches, scheduling and the DaemonSet controller (the harness
creates and deletes the pods), image pulls (images are loaded), resource
requests and cgroup limits, a sandbox for pods that do not share their PID
namespace, and ctr's default spec differs from CRI's in a tmpfs on /run. After
a reboot kubelet keeps a pod's restart counts, this runner starts them at 0.
"""

import argparse
import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

from pod_worker import RUNNER_LABEL, PodWorker, ctr, now_iso, write_json

# Polling stands in for kubelet's watch: short, so that what a pod
# replacement costs is kovs's, not the poll's.
LIST_INTERVAL = 0.2


def controlled(pod):
    """A pod a controller made (the DaemonSets' stand-in): the ones this runner runs."""
    return any(o.get("controller") for o in pod["metadata"].get("ownerReferences", []))


class Kubelet:
    def __init__(self, a):
        self.node = a.node
        self.dir = a.dir
        api = urllib.parse.urlsplit(a.api_server)
        self.api_host, self.api_port = api.hostname, api.port or 443
        self.token_file, self.ca_file = a.api_token, a.api_ca
        self.service = (a.service_host, a.service_port)
        self.host_ip = a.host_ip
        self.tls = ssl.create_default_context(cafile=a.api_ca)
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.workers = {}      # uid -> PodWorker
        self.current = None    # uid of the newest pod: its status is DIR/status.json
        self.last_error = None
        self.log_file = open(os.path.join(self.dir, "kubelet.log"), "a", encoding="utf-8", buffering=1)

    def event(self, what):
        print(f"{now_iso()} {what}", file=self.log_file, flush=True)

    # --- the API server, over the node's network -------------------------------

    def get(self, path):
        with open(self.token_file, encoding="utf-8") as f:
            token = f.read().strip()
        conn = http.client.HTTPSConnection(self.api_host, self.api_port, context=self.tls, timeout=5)
        try:
            conn.request("GET", path, headers={"Authorization": "Bearer " + token, "Accept": "application/json",
                                               "User-Agent": f"kubelet/v1.27 ({self.node})"})
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                raise RuntimeError(f"GET {path}: {r.status} {body[:200].decode(errors='replace')}")
            return json.loads(body)
        finally:
            conn.close()

    def list_pods(self):
        q = urllib.parse.urlencode({"fieldSelector": f"spec.nodeName={self.node}"})
        return [p for p in self.get(f"/api/v1/pods?{q}")["items"] if controlled(p)]

    def config_maps(self, pod):
        out = {}
        ns = pod["metadata"]["namespace"]
        for v in pod["spec"].get("volumes", []):
            if "configMap" in v:
                name = v["configMap"]["name"]
                out[name] = self.get(f"/api/v1/namespaces/{ns}/configmaps/{name}").get("data", {})
        return out

    # --- pods ----------------------------------------------------------------------

    def mirror(self, uid, doc):
        with self.lock:
            if uid == self.current:
                write_json(os.path.join(self.dir, "status.json"), doc)

    def start_pod(self, pod):
        uid = pod["metadata"]["uid"]
        worker = PodWorker(pod, self.config_maps(pod), self.node, self.dir, self.service,
                           self.token_file, self.ca_file, self.host_ip, self.event)
        worker.on_status = lambda doc, uid=uid: self.mirror(uid, doc)
        with self.lock:
            self.workers[uid] = worker
            self.current = uid
        self.event(f"SyncLoop ADD: pod {pod['metadata']['namespace']}/{pod['metadata']['name']} (uid {uid})")
        threading.Thread(target=worker.run, daemon=True).start()

    def delete_pod(self, uid):
        with self.lock:
            worker = self.workers.pop(uid)
        self.event(f"SyncLoop DELETE: pod {worker.namespace}/{worker.name} (uid {uid})")
        threading.Thread(target=worker.delete, daemon=True).start()

    def sync_once(self):
        try:
            pods = {p["metadata"]["uid"]: p for p in self.list_pods()}
            for uid, pod in pods.items():
                if uid not in self.workers:
                    self.start_pod(pod)
        except (OSError, RuntimeError, ValueError, KeyError, ssl.SSLError) as e:
            # Unreachable or failing: keep what runs, as kubelet does.
            if str(e) != self.last_error:
                self.event(f"cannot sync pods with the API server https://{self.api_host}:{self.api_port}: {e}")
            self.last_error = str(e)
            return
        if self.last_error:
            self.event("pods in sync with the API server again")
            self.last_error = None
        for uid in [u for u in self.workers if u not in pods]:
            self.delete_pod(uid)

    def gc(self):
        """Containers and sandboxes of the runner's last run on this node
        (their tasks died with it, or with the node)."""
        stale = ctr("containers", "ls", "-q", f'labels."{RUNNER_LABEL}"', check=False).stdout.split()
        for cid in stale:
            ctr("tasks", "delete", "--force", cid, check=False)
            ctr("containers", "delete", cid, check=False)
        if stale:
            self.event(f"removed {len(stale)} containers of an earlier run: {' '.join(stale)}")

    def run(self):
        # At boot containerd may not be up yet.
        while not self.stopping.is_set() and ctr("version", check=False).returncode != 0:
            self.stopping.wait(0.2)
        self.gc()
        self.event(f"kubelet runner on {self.node}: pods from https://{self.api_host}:{self.api_port}")
        while not self.stopping.is_set():
            self.sync_once()
            self.stopping.wait(LIST_INTERVAL)

    def shutdown(self):
        """SIGTERM (the harness tearing down): every pod deleted as if the API
        server had deleted it."""
        self.stopping.set()
        with self.lock:
            uids = list(self.workers)
        threads = []
        for uid in uids:
            with self.lock:
                worker = self.workers.pop(uid)
            threads.append(threading.Thread(target=worker.delete))
            threads[-1].start()
        for t in threads:
            t.join()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--node", required=True)
    p.add_argument("--api-server", required=True, help="https://HOST:PORT, the address kubelet's kubeconfig names")
    p.add_argument("--api-token", required=True)
    p.add_argument("--api-ca", required=True)
    p.add_argument("--dir", required=True, help="status, events and container logs go here")
    p.add_argument("--service-host", required=True, help="the kubernetes Service's address")
    p.add_argument("--service-port", required=True)
    p.add_argument("--host-ip", help="status.hostIP (default: the node's address on eth0's network)")
    a = p.parse_args()
    if not a.host_ip:
        out = subprocess.run(["hostname", "-i"], capture_output=True, text=True)
        a.host_ip = (out.stdout.split() or ["127.0.0.1"])[0]
    os.makedirs(a.dir, exist_ok=True)
    k = Kubelet(a)
    done = threading.Event()

    def on_term(*_):
        threading.Thread(target=lambda: (k.shutdown(), done.set()), daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    threading.Thread(target=k.run, daemon=True).start()
    while not done.wait(1):
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
