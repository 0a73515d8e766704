# shellcheck shell=bash
# The one prologue of every e2e scenario and cluster benchmark: root, and the
# tools the node provider KOVS_PROVIDER needs; without them the run is
# skipped (exit 77) with what is missing and where it comes from.
#   kovs_prologue WHAT    WHAT: what is run ("e2e tests", "cluster benchmarks")
kovs_prologue() {
    local what=$1 b tools=()
    [ "$(id -u)" -eq 0 ] || { echo "$what need root (network namespaces); skipped"; exit 77; }
    case ${KOVS_PROVIDER:-netns} in
        docker) tools=(dockerd docker debootstrap) ;;
        kind-node) tools=(dockerd docker debootstrap busybox socat openssl) ;;
    esac
    for b in "${tools[@]}"; do
        command -v "$b" >/dev/null ||
            { echo "the ${KOVS_PROVIDER} provider needs $b (scripts/install-deps.sh installs it); skipped"; exit 77; }
    done
}
