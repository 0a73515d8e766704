#!/bin/bash
# Starts the kubelet runner of a kind-node node with the arguments that
# kind-node-cluster.sh's kubelet_start left in /etc/kovs-kubelet/args (one per
# line, in the node's own filesystem, so they outlive a reboot): run by
# kubelet_start once, and by node-boot.sh at every boot after that, as kind's
# nodes start kubelet from systemd. Nothing to do on a node never configured.
set -euo pipefail
args=/etc/kovs-kubelet/args
[ -s "$args" ] || exit 0
mapfile -t a < "$args"
cd "$(dirname "$0")"
exec setsid python3 kovs_kubelet.py "${a[@]}" >> /var/log/kovs-kubelet.log 2>&1 < /dev/null
