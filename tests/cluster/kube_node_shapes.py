"""The Node objects kube_api_mock.py serves, one function per shape: a worker
as kind serialises it ("kind": what the agent's footprint is measured
against, conditions, images and all) and the fields kovs reads ("minimal")."""


def kind_node(name, ips, cidrs, rv, index):
    """A Node as kind v0.20 / Kubernetes 1.27 serialises a worker."""
    stamp = "2026-11-30T08:%02d:%02dZ" % (index // 60 % 60, index % 60)  # later added, later stamp
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
            "addresses": [{"type": "InternalIP", "address": ip} for ip in ips] + [{"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "%032x" % (index * 104729), "systemUUID": uid, "bootID": uid,
                         "kernelVersion": "6.1.0-13-amd64", "osImage": "Debian GNU/Linux 11 (bullseye)",
                         "containerRuntimeVersion": "containerd://1.7.1", "kubeletVersion": "v1.27.3",
                         "kubeProxyVersion": "v1.27.3", "operatingSystem": "linux", "architecture": "amd64"},
            "images": [{"names": names, "sizeBytes": size} for names, size in images],
        },
    }


def minimal_node(name, ips, cidrs, rv, _index):
    return {"kind": "Node", "apiVersion": "v1",
            "metadata": {"name": name, "resourceVersion": rv},
            "spec": {"podCIDR": cidrs[0] if cidrs else "", "podCIDRs": cidrs},
            "status": {"addresses": [{"type": "InternalIP", "address": ip} for ip in ips]}}
