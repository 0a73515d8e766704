# shellcheck shell=bash source-path=SCRIPTDIR
# Sources the node provider named by KOVS_PROVIDER (default netns): every
# provider offers the same functions (cluster-common.sh lists them).
case ${KOVS_PROVIDER:=netns} in
    netns)
        # shellcheck source=netns-cluster.sh
        source "$(dirname "${BASH_SOURCE[0]}")/netns-cluster.sh" ;;
    docker)
        # shellcheck source=docker-cluster.sh
        source "$(dirname "${BASH_SOURCE[0]}")/docker-cluster.sh" ;;
    kind-node)
        # shellcheck source=kind-node-cluster.sh
        source "$(dirname "${BASH_SOURCE[0]}")/kind-node-cluster.sh" ;;
    *)
        printf 'KOVS_PROVIDER=%s: unknown node provider (netns, docker or kind-node)\n' "$KOVS_PROVIDER" >&2
        exit 2 ;;
esac
export KOVS_PROVIDER
if [ "$TOPOLOGY" = routed ] && [ "$KOVS_PROVIDER" != netns ]; then
    printf 'KOVS_TOPOLOGY=routed: only the netns provider builds a routed underlay (got provider %s)\n' "$KOVS_PROVIDER" >&2
    exit 2
fi
