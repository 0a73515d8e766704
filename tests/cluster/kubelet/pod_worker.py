"""One pod of the kubelet runner (kovs_kubelet.py), run through containerd.

Test harness, not product. Like kubelet's pod worker for that pod it:
  - makes the volumes: hostPath with its type's checks (DirectoryOrCreate makes
    the directory, CharDevice must be one, ...), configMap (kubelet's atomic
    writer layout: ..data -> timestamped directory, one symlink per key),
    emptyDir (one per pod, kept across container restarts and node reboots),
    projected volumes of a service account token, kube-root-ca.crt and the
    namespace, and the projected service account volume (token, ca.crt,
    namespace) every container gets at
    /var/run/secrets/kubernetes.io/serviceaccount unless the pod says
    automountServiceAccountToken: false;
  - with shareProcessNamespace, starts the pod's sandbox first: a task that
    only holds the PID namespace every container then joins, as PID 1 reaping
    what is orphaned in it (CRI's pause container; kind's pause image cannot
    be fetched here, so the node's tini-static runs `sleep infinity` in the
    pod's first image instead); each container keeps its own cgroup, so when a
    container's main process exits runc kills what else it started, as it
    does for any container that does not own its PID namespace;
  - runs the init containers one after the other, each until it exits 0, then
    the containers in their order, each through `ctr run` with the spec's
    command/args (over the image's ENTRYPOINT/CMD, read from containerd as
    kubelet learns it from CRI), env (+ the kubernetes Service variables
    kubelet injects, the downward API fields), the volume mounts with their
    propagation as containerd's CRI maps them (None -> rprivate,
    HostToContainer -> rslave, after checking the source is a shared or slave
    mount), the capabilities (the runtime's defaults, less drop, plus add),
    hostNetwork (the node's network and UTS namespaces), the seccomp profile
    (RuntimeDefault: containerd's default profile, `ctr run --seccomp`; pod
    level, or the container's over it) and limits.memory (its cgroup's limit);
  - restartPolicy Always: a container that exits is started again after
    kubelet's back-off (0 s, then 10 s doubling to 300 s; reset after 10 min);
  - probes: startupProbe, then livenessProbe and readinessProbe, httpGet with
    periodSeconds, timeoutSeconds, failureThreshold, successThreshold and
    initialDelaySeconds; a failed startup or liveness probe kills the
    container (SIGTERM, SIGKILL after terminationGracePeriodSeconds) and it
    is restarted; a container is ready after its readiness probe passes, the
    pod Ready when every container is;
  - deletion: every container stopped at once with the grace period, then the
    sandbox.
Its status (kubelet's PodStatus, as JSON) goes to DIR/pods/<uid>/status.json
after every change, container logs to DIR/logs/<pod>/<container>/<restart>.log
(kubelet: /var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log).

One file of some 550 lines on purpose: every step above reads and writes the
one pod's state (its status, its containers' restart counts and back-offs)
under one lock, in kubelet's order, and reads best top to bottom as one worker.
"""

import http.client
import json
import os
import random
import subprocess
import threading
import time

DEFAULT_CAPS = {"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID", "SETFCAP",
                "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
BACKOFF_INITIAL, BACKOFF_MAX = 10.0, 300.0
# Every container and sandbox the runner makes carries it, so that a runner
# started after a reboot finds (and removes) those of the node's last boot.
RUNNER_LABEL = "io.kovs.kubelet.pod"


def normalized_image(ref):
    """The reference as containerd stores it (kubelet's images are named like
    that: kovs:dev is docker.io/library/kovs:dev), as Docker's reference
    normalisation makes it."""
    name, _, digest = ref.partition("@")
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = "docker.io/library/" + name
    elif not ("." in first or ":" in first or first == "localhost"):
        name = "docker.io/" + name
    if not digest and ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return name + ("@" + digest if digest else "")


def ctr(*args, check=True):
    return subprocess.run(["ctr", "--namespace", "k8s.io", *args], capture_output=True, text=True, check=check)


def image_config(ref):
    """The image's ENTRYPOINT/CMD as containerd has them (what CRI's
    ImageStatus gives kubelet): image -> manifest (through an index, if any)
    -> config blob."""
    ref = normalized_image(ref)
    for line in ctr("images", "ls").stdout.splitlines()[1:]:
        parts = line.split()
        if parts and parts[0] == ref:
            digest = parts[2]
            break
    else:
        raise RuntimeError(f"image {ref} is not in containerd (not loaded?)")
    blob = json.loads(ctr("content", "get", digest).stdout)
    if "manifests" in blob:  # an index: the linux one
        ours = [m for m in blob["manifests"] if m.get("platform", {}).get("os", "linux") == "linux"]
        blob = json.loads(ctr("content", "get", (ours or blob["manifests"])[0]["digest"]).stdout)
    return json.loads(ctr("content", "get", blob["config"]["digest"]).stdout).get("config", {})


def write_json(path, doc):
    """Atomically (a temp file of this thread's own, renamed into place)."""
    tmp = f"{path}.{threading.get_ident()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    os.rename(tmp, path)


def now_iso():
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % (now * 1000 % 1000)


def quantity_bytes(q):
    """A Kubernetes memory quantity ("128Mi", "1G", "1048576") in bytes."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 10**3, "M": 10**6, "G": 10**9}
    for suffix, factor in units.items():
        if q.endswith(suffix) and q[:-len(suffix)].isdigit():
            return int(q[:-len(suffix)]) * factor
    if q.isdigit():
        return int(q)
    raise RuntimeError(f"memory quantity {q!r}: not one the runner reads (digits with Ki, Mi, Gi, k, M, G)")


class PodWorker:
    def __init__(self, pod, config_maps, node, directory, service, token_file, ca_file, host_ip, event):
        self.pod = pod
        self.meta = pod["metadata"]
        self.spec = pod["spec"]
        self.name, self.uid, self.namespace = self.meta["name"], self.meta["uid"], self.meta["namespace"]
        self.config_maps = config_maps
        self.node = node
        self.dir = directory
        self.status_dir = os.path.join(directory, "pods", self.uid)
        os.makedirs(self.status_dir, exist_ok=True)
        self.pod_dir = f"/var/lib/kubelet/pods/{self.uid}"
        self.service = service
        self.token_file, self.ca_file = token_file, ca_file
        self.host_ip = host_ip
        self.log_event = event
        self.grace = int(self.spec.get("terminationGracePeriodSeconds", 30))
        self.lock = threading.RLock()
        self.stopping = threading.Event()
        self.phase = "Pending"
        self.deleted = False
        self.started_at = time.time()
        self.init_status = [self.new_status(c) for c in self.spec.get("initContainers", [])]
        self.status = [self.new_status(c) for c in self.spec["containers"]]
        self.mounts = {}
        self.running = {}    # container name -> (ctr run process, container id)
        self.image_configs = {}
        self.sandbox = None  # (container id, pid) with shareProcessNamespace
        self.boot = "%04x" % random.randrange(0x10000)  # container ids unique across runner restarts

    @staticmethod
    def new_status(c):
        return {"name": c["name"], "image": c["image"], "state": "waiting", "reason": "PodInitializing",
                "containerID": None, "restartCount": 0, "ready": False, "started": False, "lastExit": None}

    def event(self, what):
        self.log_event(f"{self.name}: {what}")

    def status_doc(self):
        with self.lock:
            ready = self.phase == "Running" and all(s["ready"] for s in self.status)
            return {"name": self.name, "namespace": self.namespace, "uid": self.uid, "nodeName": self.node,
                    "phase": self.phase, "ready": ready, "deleted": self.deleted,
                    "initContainerStatuses": self.init_status, "containerStatuses": self.status,
                    "startedAt": self.started_at, "updated": time.time()}

    def write_status(self):
        # One writer at a time: every container's thread reports.
        with self.lock:
            doc = self.status_doc()
            write_json(os.path.join(self.status_dir, "status.json"), doc)
            self.on_status(doc)

    def on_status(self, doc):
        """Replaced by the runner: mirrors the current pod's status."""

    # --- volumes -------------------------------------------------------------

    def volume_path(self, plugin, name):
        path = f"{self.pod_dir}/volumes/kubernetes.io~{plugin}/{name}"
        os.makedirs(path, exist_ok=True)
        return path

    @staticmethod
    def atomic_write(path, files):
        """kubelet's AtomicWriter: the payload in a timestamped directory,
        ..data pointing at it, and a symlink per key through ..data."""
        stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.") + str(random.randint(0, 10**9))
        os.makedirs(os.path.join(path, stamp))
        for key, text in files.items():
            with open(os.path.join(path, stamp, key), "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(os.path.join(path, stamp, key), 0o644)
        os.symlink(stamp, os.path.join(path, "..data_tmp"))
        os.rename(os.path.join(path, "..data_tmp"), os.path.join(path, "..data"))
        for key in files:
            if not os.path.lexists(os.path.join(path, key)):
                os.symlink(os.path.join("..data", key), os.path.join(path, key))

    def prepare_volumes(self):
        for v in self.spec.get("volumes", []):
            name = v["name"]
            if "hostPath" in v:
                self.mounts[name] = self.host_path(v["hostPath"], name)
            elif "configMap" in v:
                path = self.volume_path("configmap", name)
                self.atomic_write(path, self.config_maps[v["configMap"]["name"]])
                self.mounts[name] = path
            elif "emptyDir" in v:
                self.mounts[name] = self.volume_path("empty-dir", name)
            elif "projected" in v:
                path = self.volume_path("projected", name)
                self.atomic_write(path, self.projected(v["projected"]["sources"], name))
                self.mounts[name] = path
            else:
                raise RuntimeError(f"volume {name}: no source the runner implements")
        # The projected service account volume (automountServiceAccountToken).
        self.sa_path = None
        if self.spec.get("automountServiceAccountToken", True):
            path = self.volume_path("projected", "kube-api-access-" + self.uid[:5])
            self.atomic_write(path, {"token": self.token(), "ca.crt": self.ca(), "namespace": self.namespace})
            self.sa_path = path

    def token(self):
        with open(self.token_file, encoding="utf-8") as f:
            return f.read().strip()

    def ca(self):
        with open(self.ca_file, encoding="utf-8") as f:
            return f.read()

    def projected(self, sources, name):
        files = {}
        for s in sources:
            if "serviceAccountToken" in s:
                files[s["serviceAccountToken"]["path"]] = self.token()
            elif "configMap" in s and s["configMap"]["name"] == "kube-root-ca.crt":
                for item in s["configMap"]["items"]:
                    files[item["path"]] = self.ca()
            elif "downwardAPI" in s:
                for item in s["downwardAPI"]["items"]:
                    files[item["path"]] = self.namespace
            else:
                raise RuntimeError(f"volume {name}: a projected source the runner does not implement: {s}")
        return files

    @staticmethod
    def host_path(hp, name):
        import stat as st
        path, kind = hp["path"], hp.get("type", "")
        what = f"volume {name}: hostPath {path} (type {kind or 'unset'})"
        exists = os.path.lexists(path)
        mode = os.stat(path).st_mode if exists else 0
        if kind == "DirectoryOrCreate" and not exists:
            os.makedirs(path, mode=0o755)
        elif kind == "FileOrCreate" and not exists:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        elif kind in ("Directory", "DirectoryOrCreate") and not st.S_ISDIR(mode):
            raise RuntimeError(f"{what}: not a directory")
        elif kind == "File" and not st.S_ISREG(mode):
            raise RuntimeError(f"{what}: not a file")
        elif kind == "Socket" and not st.S_ISSOCK(mode):
            raise RuntimeError(f"{what}: not a socket")
        elif kind == "CharDevice" and not st.S_ISCHR(mode):
            raise RuntimeError(f"{what}: not a character device")
        elif kind == "BlockDevice" and not st.S_ISBLK(mode):
            raise RuntimeError(f"{what}: not a block device")
        return os.path.realpath(path)

    @staticmethod
    def shared_or_slave(src):
        """containerd CRI's check for HostToContainer: the mount holding src
        propagates (shared or slave), else the mount would never see new ones."""
        best, fields = "", []
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                point = parts[4]
                if (src == point or src.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
                    best, fields = point, parts[6:parts.index("-")]
        if not any(x.startswith(("shared:", "master:")) for x in fields):
            raise RuntimeError(f"path {src} is mounted on {best} but it is not a shared or slave mount")

    # --- the sandbox -------------------------------------------------------------

    def start_sandbox(self):
        """The task whose PID namespace the containers join (shareProcessNamespace)."""
        cid = f"{self.name}-sandbox-{self.boot}"
        pidfile = os.path.join(self.status_dir, "sandbox.pid")
        image = normalized_image(self.spec["containers"][0]["image"])
        r = ctr("run", "-d", "--null-io", "--net-host", "--label", f"{RUNNER_LABEL}={self.uid}",
                "--mount", "type=bind,src=/usr/bin/tini-static,dst=/.kovs-pause,options=rbind:ro",
                "--pid-file", pidfile, image, cid, "/.kovs-pause", "--", "sleep", "infinity", check=False)
        if r.returncode != 0:
            raise RuntimeError(f"pod sandbox {cid}: ctr run: {r.stderr.strip()}")
        with open(pidfile, encoding="utf-8") as f:
            self.sandbox = (cid, int(f.read().strip()))
        self.event(f"Started sandbox {cid} (pid {self.sandbox[1]}): the pod's shared PID namespace")

    def stop_sandbox(self):
        if self.sandbox:
            cid = self.sandbox[0]
            ctr("tasks", "delete", "--force", cid, check=False)
            ctr("containers", "delete", cid, check=False)
            self.sandbox = None

    # --- one container ---------------------------------------------------------

    def env(self, c):
        host, port = self.service
        out = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
               "KUBERNETES_SERVICE_PORT_HTTPS": port, "KUBERNETES_PORT": f"tcp://{host}:{port}",
               f"KUBERNETES_PORT_{port}_TCP": f"tcp://{host}:{port}", f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
               f"KUBERNETES_PORT_{port}_TCP_PORT": port, f"KUBERNETES_PORT_{port}_TCP_ADDR": host}
        fields = {"spec.nodeName": self.node, "metadata.name": self.name, "metadata.namespace": self.namespace,
                  "metadata.uid": self.uid, "spec.serviceAccountName": self.spec.get("serviceAccountName", "default"),
                  "status.hostIP": self.host_ip, "status.podIP": self.host_ip}
        for e in c.get("env", []):
            out[e["name"]] = fields[e["valueFrom"]["fieldRef"]["fieldPath"]] if "valueFrom" in e else str(e.get("value", ""))
        return out

    def argv(self, c):
        if "command" in c:
            return c["command"] + c.get("args", [])
        if c["image"] not in self.image_configs:
            self.image_configs[c["image"]] = image_config(c["image"])
        cfg = self.image_configs[c["image"]]
        entrypoint, cmd = cfg.get("Entrypoint") or [], cfg.get("Cmd") or []
        return entrypoint + (c["args"] if "args" in c else cmd)

    def ctr_run_args(self, c, cid, log):
        args = ["ctr", "--namespace", "k8s.io", "run", "--rm", "--log-uri", "file://" + log,
                "--label", f"{RUNNER_LABEL}={self.uid}", "--net-host", "--with-ns", "uts:/proc/1/ns/uts"]
        if self.sandbox:
            args += ["--with-ns", f"pid:/proc/{self.sandbox[1]}/ns/pid"]
        caps = c.get("securityContext", {}).get("capabilities", {})
        drop = {x.upper() for x in caps.get("drop", [])}
        final = (set() if "ALL" in drop else DEFAULT_CAPS - drop) | {x.upper() for x in caps.get("add", [])}
        args += [f"--cap-add=CAP_{x}" for x in sorted(final - DEFAULT_CAPS)]
        args += [f"--cap-drop=CAP_{x}" for x in sorted(DEFAULT_CAPS - final)]
        seccomp = c.get("securityContext", {}).get("seccompProfile") or self.spec.get("securityContext", {}).get("seccompProfile")
        if seccomp and seccomp["type"] == "RuntimeDefault":
            args.append("--seccomp")
        memory = c.get("resources", {}).get("limits", {}).get("memory")
        if memory:
            args += ["--memory-limit", str(quantity_bytes(memory))]
        for k, v in self.env(c).items():
            args += ["--env", f"{k}={v}"]
        mounts = [(SA_DIR, self.sa_path, True, "None")] if self.sa_path else []
        for m in c.get("volumeMounts", []):
            mounts.append((m["mountPath"], self.mounts[m["name"]], m.get("readOnly", False), m.get("mountPropagation", "None")))
        # Shallow paths first, as CRI sorts them, so no mount hides another.
        for dst, src, ro, prop in sorted(mounts, key=lambda m: m[0].rstrip("/").count("/")):
            if prop == "HostToContainer":
                self.shared_or_slave(src)
            opts = ["rbind", "rslave" if prop == "HostToContainer" else "rprivate", "ro" if ro else "rw"]
            args += ["--mount", f"type=bind,src={src},dst={dst},options={':'.join(opts)}"]
        if c.get("workingDir"):
            args += ["--cwd", c["workingDir"]]
        return args + [normalized_image(c["image"]), cid] + self.argv(c)

    def run_once(self, c, st, on_start=None):
        """Starts the container and waits for it; returns its exit code.
        on_start(proc, cid) runs once it started (probes)."""
        with self.lock:
            attempt = st["restartCount"]
            cid = f"{self.name}-{c['name']}-{attempt}-{self.boot}"
            logdir = os.path.join(self.dir, "logs", self.name, c["name"])
            os.makedirs(logdir, exist_ok=True)
            log = os.path.join(logdir, f"{attempt}.log")
        try:
            args = self.ctr_run_args(c, cid, log)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
            self.event(f"Failed: container {c['name']}: {e}")
            with self.lock:
                st.update(state="waiting", reason="CreateContainerError", message=str(e))
            self.write_status()
            return None
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(log + ".ctr", "a", encoding="utf-8"))
        with self.lock:
            st.update(state="running", reason=None, containerID=cid, startedAt=now_iso(), started=False, ready=False)
            st.pop("message", None)
            self.running[c["name"]] = (proc, cid)
        self.event(f"Started container {c['name']} ({cid}): {' '.join(self.argv(c))}")
        self.write_status()
        if on_start:
            on_start(c, st, proc, cid)
        code = proc.wait()
        with self.lock:
            self.running.pop(c["name"], None)
            st.update(state="terminated", ready=False, started=False,
                      lastExit={"exitCode": code, "finishedAt": now_iso(), "finishedAtUnix": time.time(),
                                "reason": "Completed" if code == 0 else "Error"})
        self.event(f"container {c['name']} ({cid}) exited with {code}")
        self.write_status()
        return code

    def kill(self, name, why, grace=None):
        """SIGTERM, then SIGKILL after the grace period, as kubelet kills a container."""
        with self.lock:
            entry = self.running.get(name)
        if not entry:
            return
        proc, cid = entry
        grace = self.grace if grace is None else grace
        self.event(f"Killing container {name} ({cid}) with a grace period of {grace}s: {why}")
        ctr("tasks", "kill", "--signal", "SIGTERM", cid, check=False)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.event(f"container {name} ({cid}) outlived its grace period: SIGKILL")
            ctr("tasks", "kill", "--signal", "SIGKILL", cid, check=False)
            proc.wait()

    # --- probes ----------------------------------------------------------------

    def probe_once(self, c, probe):
        get = probe["httpGet"]
        port = get["port"]
        if isinstance(port, str) and not port.isdigit():
            port = next(p["containerPort"] for p in c.get("ports", []) if p.get("name") == port)
        conn = http.client.HTTPConnection(get.get("host", self.host_ip), int(port),
                                          timeout=probe.get("timeoutSeconds", 1))
        try:
            conn.request("GET", get.get("path", "/"), headers={"User-Agent": "kube-probe/1.27"})
            code = conn.getresponse().status
            return 200 <= code < 400, f"HTTP probe failed with statuscode: {code}"
        except OSError as e:
            return False, f'Get "http://{get.get("host", self.host_ip)}:{port}{get.get("path", "/")}": {e}'
        finally:
            conn.close()

    def prober(self, c, st, proc, cid):
        """The container's probes until it exits: startup first, then liveness
        and readiness, each on its own period."""
        probes = {k: c[k] for k in ("startupProbe", "livenessProbe", "readinessProbe") if k in c}
        with self.lock:
            if "readinessProbe" not in probes:
                st.update(ready=True, readyAtUnix=time.time())
            if "startupProbe" not in probes:
                st["started"] = True
        self.write_status()
        if probes:
            threading.Thread(target=self.probe_loop, args=(c, st, proc, probes), daemon=True).start()

    def probe_loop(self, c, st, proc, probes):
        count = {k: [0, 0] for k in probes}   # consecutive successes, failures
        due = {k: time.monotonic() + p.get("initialDelaySeconds", 0) for k, p in probes.items()}
        while proc.poll() is None and not self.stopping.is_set():
            with self.lock:
                started = st["started"]
            active = [k for k in (["startupProbe"] if not started else ["livenessProbe", "readinessProbe"]) if k in probes]
            for k in active:
                if time.monotonic() < due[k]:
                    continue
                p = probes[k]
                due[k] = time.monotonic() + p.get("periodSeconds", 10)
                ok, msg = self.probe_once(c, p)
                s, f = count[k]
                count[k] = [s + 1, 0] if ok else [0, f + 1]
                if not ok:
                    self.event(f"{k[:-5].capitalize()} probe failed for {c['name']}: {msg}")
                if k == "startupProbe":
                    if ok:
                        with self.lock:
                            st["started"] = True
                        self.write_status()
                    elif count[k][1] >= p.get("failureThreshold", 3):
                        threading.Thread(target=self.kill, args=(c["name"], "failed startup probe"), daemon=True).start()
                        return
                elif k == "livenessProbe" and count[k][1] >= p.get("failureThreshold", 3):
                    threading.Thread(target=self.kill, args=(c["name"], "failed liveness probe"), daemon=True).start()
                    return
                elif k == "readinessProbe":
                    with self.lock:
                        was = st["ready"]
                        if ok and count[k][0] >= p.get("successThreshold", 1):
                            if not st["ready"]:
                                st["readyAtUnix"] = time.time()
                            st["ready"] = True
                        elif not ok and count[k][1] >= p.get("failureThreshold", 3):
                            st["ready"] = False
                        changed = was != st["ready"]
                    if changed:
                        self.event(f"container {c['name']} {'ready' if st['ready'] else 'not ready'}")
                        self.write_status()
            time.sleep(0.2)

    # --- the pod -----------------------------------------------------------------

    def backoff_wait(self, c, st, state):
        """kubelet's crash-loop back-off before restarting a container."""
        delay, last = state
        now = time.monotonic()
        if last is not None and now - last > 2 * BACKOFF_MAX:
            delay = None
        wait = 0.0 if delay is None else delay
        nxt = BACKOFF_INITIAL if delay is None else min(delay * 2, BACKOFF_MAX)
        if wait:
            with self.lock:
                st.update(state="waiting", reason="CrashLoopBackOff",
                          message=f"back-off {int(wait)}s restarting failed container={c['name']} pod={self.name}")
            self.event(f"Back-off {int(wait)}s restarting failed container {c['name']}")
            self.write_status()
            if self.stopping.wait(wait):
                return None
        return (nxt, time.monotonic())

    def run_container(self, c, st):
        backoff = (None, None)
        while not self.stopping.is_set():
            self.run_once(c, st, self.prober)
            if self.stopping.is_set():
                return
            with self.lock:
                st["restartCount"] += 1
            backoff = self.backoff_wait(c, st, backoff)
            if backoff is None:
                return

    def run(self):
        self.write_status()
        self.event(f"pod {self.namespace}/{self.name} (uid {self.uid}) on {self.node}")
        try:
            self.prepare_volumes()
            if self.spec.get("shareProcessNamespace"):
                self.start_sandbox()
        except (RuntimeError, OSError, KeyError) as e:
            self.event(f"FailedMount: {e}")
            with self.lock:
                for s in self.init_status + self.status:
                    s.update(reason="ContainerCreating", message=f"FailedMount: {e}")
            self.write_status()
            self.stopping.wait()
            return
        for c, st in zip(self.spec.get("initContainers", []), self.init_status):
            backoff = (None, None)
            while not self.stopping.is_set():
                if self.run_once(c, st) == 0:
                    break
                with self.lock:
                    st["restartCount"] += 1
                backoff = self.backoff_wait(c, st, backoff)
                if backoff is None:
                    break
            if self.stopping.is_set():
                return
        with self.lock:
            if self.stopping.is_set():
                return
            self.phase = "Running"
        # In their order, as kubelet starts them (it does not wait for one to
        # be ready before the next).
        for c, st in zip(self.spec["containers"], self.status):
            threading.Thread(target=self.run_container, args=(c, st), daemon=True).start()
        self.stopping.wait()

    def delete(self):
        """Pod deletion: every running container stopped at once with the grace
        period (kubelet's killPod), then the sandbox."""
        with self.lock:
            self.stopping.set()
            names = list(self.running)
        killers = [threading.Thread(target=self.kill, args=(n, "pod deleted")) for n in names]
        for t in killers:
            t.start()
        for t in killers:
            t.join()
        # A container that was starting as the deletion came: wait for its
        # ctr run to be gone too.
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            with self.lock:
                left = list(self.running)
            if not left:
                break
            for n in left:
                self.kill(n, "pod deleted")
        self.stop_sandbox()
        with self.lock:
            self.phase = "Succeeded"
            self.deleted = True
        self.write_status()
        self.event("pod deleted")
