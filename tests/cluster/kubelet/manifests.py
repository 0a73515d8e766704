#!/usr/bin/env python3
"""Renders the kovs DaemonSet and the ConfigMaps its pods mount, for the kind-node provider.

  manifests.py DIR_OR_FILE --image IMAGE --daemonset DS.json --objects DIR

DIR_OR_FILE is what `kubectl apply -k` / `-f` takes: kind/manifests, or
kind/overlays/companion, whose kustomization.yaml builds on it, or
kind/uninstall.yaml, whose pods mount the ConfigMap applied with the manifests
before (found in DIR). No kustomize
binary is needed here, so this does the part of `kubectl kustomize` that the
shipped kustomizations use: `resources` (files and directories) and
`patches` by `path`, applied as strategic merge patches: maps merge key by key,
the lists Kubernetes merges by a key are merged by it (containers,
initContainers, env, volumes by name; volumeMounts by mountPath; ports by
containerPort), an item of such a list with `$patch: delete` removes the
base's item of that key, any other list is replaced. Any other kustomization
field, or any other `$patch` directive, is refused.

Then every field of the DaemonSet is checked against ALLOWED below, the fields
the kubelet runner (pod_worker.py) implements (or accepts knowingly: each says
why it has no effect here). Anything else stops the run with the field's
path, so the manifests cannot grow a field that the runner silently ignores.

Written: DS.json, the DaemonSet with IMAGE in place of the manifests' kovs:dev
(as `kind/kovs-kind --image` substitutes it), from which the stand-in for the
DaemonSet controller makes each node's pod (kind-node-lifecycle.sh); and
DIR/<namespace>/configmaps/<name>.json for every ConfigMap its pods mount, as
the mock API server serves them (kube_api_mock.py --objects DIR).
"""

import argparse
import json
import os
import sys

import yaml

MANIFEST_IMAGE = "kovs:dev"
MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "volumeMounts": "mountPath", "ports": "containerPort"}


class ManifestError(Exception):
    pass


# --- kustomize, the part the shipped files use ---------------------------------

def load_documents(path):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for d in docs:
        if not isinstance(d, dict) or "kind" not in d or "metadata" not in d:
            raise ManifestError(f"{path}: a document without kind/metadata")
    return docs


def strategic_merge(base, patch, path):
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            if k.startswith("$"):
                raise ManifestError(f"{path}.{k}: strategic merge directives are not implemented here "
                                    f"(only $patch: delete on an item of a list merged by key)")
            out[k] = strategic_merge(base[k], v, f"{path}.{k}") if k in base else v
        return out
    if isinstance(base, list) and isinstance(patch, list):
        key = MERGE_KEYS.get(path.rsplit(".", 1)[-1])
        if key is None:
            return patch
        # The patch's items first, in its order, then the others: the order
        # kubectl kustomize (apimachinery's strategicpatch) leaves them in.
        merged, used = [], set()
        for item in patch:
            if not isinstance(item, dict) or key not in item:
                raise ManifestError(f"{path}: patch item without its merge key '{key}': {item}")
            at = next((i for i, b in enumerate(base) if isinstance(b, dict) and b.get(key) == item[key]), None)
            if item.get("$patch") == "delete":
                if set(item) != {key, "$patch"}:
                    raise ManifestError(f"{path}[{key}={item[key]}]: $patch: delete takes only the merge key")
                if at is not None:
                    used.add(at)   # deleted: neither merged nor kept
                continue
            if at is None:
                merged.append(item)
            else:
                used.add(at)
                merged.append(strategic_merge(base[at], item, f"{path}[{key}={item[key]}]"))
        return merged + [b for i, b in enumerate(base) if i not in used]
    return patch


def kustomize(path):
    """The resources a path stands for: a file's documents, or a directory's
    kustomization rendered."""
    if os.path.isfile(path):
        return load_documents(path)
    kfile = os.path.join(path, "kustomization.yaml")
    if not os.path.isfile(kfile):
        raise ManifestError(f"{path}: no kustomization.yaml")
    with open(kfile, encoding="utf-8") as f:
        k = yaml.safe_load(f) or {}
    unknown = set(k) - {"apiVersion", "kind", "resources", "patches"}
    if unknown:
        raise ManifestError(f"{kfile}: kustomization fields not implemented here: {sorted(unknown)}")
    docs = []
    for r in k.get("resources", []):
        docs += kustomize(os.path.normpath(os.path.join(path, r)))
    for p in k.get("patches", []):
        if set(p) != {"path"}:
            raise ManifestError(f"{kfile}: patches: only {{path: FILE}} is implemented, got {p}")
        ppath = os.path.join(path, p["path"])
        for patch in load_documents(ppath):
            target = [i for i, d in enumerate(docs) if d["kind"] == patch["kind"]
                      and d["metadata"]["name"] == patch["metadata"]["name"]
                      and d["metadata"].get("namespace") == patch["metadata"].get("namespace")]
            if len(target) != 1:
                raise ManifestError(f"{ppath}: patch for {patch['kind']}/{patch['metadata']['name']} "
                                    f"matches {len(target)} resources")
            docs[target[0]] = strategic_merge(docs[target[0]], patch, patch["kind"])
    return docs


# --- what kovs_kubelet.py implements --------------------------------------------
# A dict is a map whose keys are listed (a key not listed is refused); [x] a
# list of x; a string is a leaf, the string saying what the runner does with
# it; a set is a leaf that must hold one of its values.

ANY = "implemented"
PROBE = {"httpGet": {"host": ANY, "path": ANY, "port": ANY, "scheme": {"HTTP"}},
         "initialDelaySeconds": ANY, "periodSeconds": ANY, "timeoutSeconds": ANY,
         "failureThreshold": ANY, "successThreshold": ANY}
CONTAINER = {
    "name": ANY, "image": ANY, "command": ANY, "args": ANY, "workingDir": ANY,
    "imagePullPolicy": {"IfNotPresent", "Never"},   # images are loaded, never pulled
    "env": [{"name": ANY, "value": ANY,
             "valueFrom": {"fieldRef": {"fieldPath": {"spec.nodeName", "metadata.name", "metadata.namespace",
                                                      "metadata.uid", "spec.serviceAccountName",
                                                      "status.hostIP", "status.podIP"},
                                        "apiVersion": {"v1"}}}}],
    "ports": [{"name": ANY, "containerPort": "hostNetwork: informational, as for kubelet",
               "protocol": {"TCP", "UDP"}}],
    "startupProbe": PROBE, "livenessProbe": PROBE, "readinessProbe": PROBE,
    "resources": {"requests": {"cpu": "scheduling only: no effect on a node",
                               "memory": "scheduling only: no effect on a node"},
                  "limits": {"memory": "the container's cgroup memory limit (ctr run --memory-limit)"}},
    "securityContext": {"privileged": {False}, "capabilities": {"add": ANY, "drop": ANY},
                        "seccompProfile": {"type": {"RuntimeDefault", "Unconfined"}}},
    "volumeMounts": [{"name": ANY, "mountPath": ANY, "readOnly": ANY,
                      "mountPropagation": {"None", "HostToContainer"}}],
}
VOLUME = {"name": ANY,
          "hostPath": {"path": ANY, "type": {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File",
                                             "Socket", "CharDevice", "BlockDevice"}},
          "configMap": {"name": ANY},
          "emptyDir": {},
          # What kubelet makes of automountServiceAccountToken, written out:
          # for a token in one container only.
          "projected": {"defaultMode": ANY, "sources": [{
              "serviceAccountToken": {"path": ANY, "expirationSeconds": "the runner's token does not expire"},
              "configMap": {"name": {"kube-root-ca.crt"}, "items": [{"key": {"ca.crt"}, "path": ANY}]},
              "downwardAPI": {"items": [{"path": ANY, "fieldRef": {"apiVersion": {"v1"},
                                                                    "fieldPath": {"metadata.namespace"}}}]}}]}}
ALLOWED = {
    "apiVersion": {"apps/v1"}, "kind": {"DaemonSet"},
    "metadata": {"name": ANY, "namespace": ANY, "labels": "copied to the pod"},
    "spec": {
        "selector": {"matchLabels": "the DaemonSet controller's: checked against the template's labels"},
        "updateStrategy": {"type": {"RollingUpdate"}, "rollingUpdate": {"maxUnavailable": {1}}},  # ds_rollout: one node at a time
        "template": {
            "metadata": {"labels": "copied to the pod", "annotations": "copied to the pod"},
            "spec": {
                "serviceAccountName": ANY,
                "automountServiceAccountToken": {True, False},
                "securityContext": {"seccompProfile": {"type": {"RuntimeDefault", "Unconfined"}}},
                "shareProcessNamespace": ANY,   # a sandbox task holds the PID namespace the containers join
                "hostNetwork": {True},  # the CNI's own pod cannot wait for a pod network
                "dnsPolicy": {"ClusterFirstWithHostNet", "Default"},   # no cluster DNS here: the node's resolv.conf
                "priorityClassName": "eviction order: no eviction here",
                "tolerations": [{"operator": {"Exists"}}],            # runs on every node, as here
                "terminationGracePeriodSeconds": ANY,
                "restartPolicy": {"Always"},
                "initContainers": [CONTAINER],
                "containers": [CONTAINER],
                "volumes": [VOLUME],
            },
        },
    },
}


def check(value, allowed, path):
    if isinstance(allowed, dict):
        if not isinstance(value, dict):
            raise ManifestError(f"{path}: expected a map, got {value!r}")
        for k, v in value.items():
            if k not in allowed:
                raise ManifestError(f"{path}.{k}: not implemented by tests/cluster/kubelet (kovs_kubelet.py); "
                                    f"implement it there and add it to ALLOWED in manifests.py")
            check(v, allowed[k], f"{path}.{k}")
    elif isinstance(allowed, list):
        if not isinstance(value, list):
            raise ManifestError(f"{path}: expected a list, got {value!r}")
        for i, item in enumerate(value):
            label = item.get("name", i) if isinstance(item, dict) else i
            check(item, allowed[0], f"{path}[{label}]")
    elif isinstance(allowed, set):
        if value not in allowed:
            raise ManifestError(f"{path}: {value!r} is not implemented here (only {sorted(map(str, allowed))})")


def stored_config_map(objects, namespace, name):
    """A ConfigMap applied before (kind/uninstall.yaml mounts the manifests'
    kovs-config), as the mock API server serves it; None when there is none."""
    path = os.path.join(objects, namespace, "configmaps", name + ".json") if objects else None
    if not path or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def render(source, image, objects=None):
    """The checked DaemonSet (image substituted) and the ConfigMaps its pods
    mount: from the source, or already in the API (objects)."""
    docs = kustomize(source)
    ds = [d for d in docs if d["kind"] == "DaemonSet"]
    if len(ds) != 1:
        raise ManifestError(f"{source}: expected one DaemonSet, found {len(ds)}")
    ds = ds[0]
    check(ds, ALLOWED, "DaemonSet")
    template = ds["spec"]["template"]
    labels = template.get("metadata", {}).get("labels", {})
    for k, v in ds["spec"]["selector"]["matchLabels"].items():
        if labels.get(k) != v:
            raise ManifestError(f"DaemonSet.spec.selector.matchLabels.{k}: the template's labels do not match")
    spec = template["spec"]
    namespace = ds["metadata"].get("namespace", "default")
    config_maps = []
    for v in spec.get("volumes", []):
        if "configMap" in v:
            name = v["configMap"]["name"]
            found = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name
                     and d["metadata"].get("namespace", "default") == namespace]
            if not found and stored_config_map(objects, namespace, name):
                continue  # in the API already: not written again
            if len(found) != 1:
                raise ManifestError(f"DaemonSet.spec.template.spec.volumes[{v['name']}]: ConfigMap {namespace}/{name} "
                                    f"found {len(found)} times in {source}, and not in the API")
            config_maps.append(found[0])
    for c in spec.get("initContainers", []) + spec["containers"]:
        if c["image"] == MANIFEST_IMAGE:
            c["image"] = image
    return ds, config_maps


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
    os.rename(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", help="kind/manifests, kind/overlays/companion, or a manifest file")
    p.add_argument("--image", default=MANIFEST_IMAGE, help="the image in place of kovs:dev")
    p.add_argument("--daemonset", required=True, help="write the DaemonSet here (JSON)")
    p.add_argument("--objects", required=True, help="the mock API server's object directory: ConfigMaps go here")
    a = p.parse_args()
    try:
        ds, config_maps = render(a.source, a.image, a.objects)
        for cm in config_maps:
            ns = cm["metadata"].get("namespace", "default")
            write_json(os.path.join(a.objects, ns, "configmaps", cm["metadata"]["name"] + ".json"), cm)
        write_json(a.daemonset, ds)
    except (ManifestError, OSError, yaml.YAMLError, KeyError) as e:
        sys.exit(f"manifests.py: {e}")


if __name__ == "__main__":
    main()
