# One table node x check from one output file per node, named after the node:
# kovsctl doctor's lines or kovsctl probe check's, both "  STATUS  ID  detail"
# with STATUS ok, skip or FAIL. A cell is the worst of that check's lines on
# that node (FAIL > skip > ok; "-" where the node has none). Then, per node,
# every failing line in full with the indented lines under it (doctor's
# "fix:"), and the nodes whose file holds no result at all, with what it
# holds instead. Exit 1 when anything failed.
#
#   awk -v what="kovsctl doctor" -f kind/node-table.awk DIR/node1 DIR/node2 ...
#
# Read by kind/kovs-kind (doctor, check) and by the kind-node provider of the
# local cluster, which runs the same probes: one table for both.
function rank(s) { return s == "FAIL" ? 3 : s == "skip" ? 2 : s == "ok" ? 1 : 0 }
function base(f) { sub(".*/", "", f); return f }
function group(id) { return index(id, "/") ? substr(id, 1, index(id, "/")) : id }
# Rows in the order they first appear, except that the rows of one group
# ("pod/NODE") stay together, sorted: one seen first in another file joins them.
function add_row(id,    j, k) {
    if (index(id, "/"))
        for (j = 1; j <= m; j++) if (group(ids[j]) == group(id)) break
    if (!index(id, "/") || j > m) { ids[++m] = id; return }
    while (j <= m && group(ids[j]) == group(id) && ids[j] < id) j++
    for (k = ++m; k > j; k--) ids[k] = ids[k - 1]
    ids[j] = id
}
BEGIN {
    for (i = 1; i < ARGC; i++) { nodes[++n] = base(ARGV[i]); if (length(nodes[n]) > w) w = length(nodes[n]) }
    if (w < 4) w = 4
    idw = 5
}
FNR == 1 { node = base(FILENAME); failing = 0 }
/^  (ok|FAIL|skip) / && NF >= 2 {
    results[node]++
    if (!($2 in seen)) { seen[$2] = 1; add_row($2); if (length($2) > idw) idw = length($2) }
    if (rank($1) > rank(cell[$2, node])) cell[$2, node] = $1
    failing = $1 == "FAIL"
    if (failing) fails[node] = fails[node] "  " $0 "\n"
    next
}
failing && /^        / { fails[node] = fails[node] "  " $0 "\n"; next }
{ failing = 0; if (length(other[node]) < 300) other[node] = other[node] (other[node] == "" ? "" : " ") $0 }
END {
    printf "    %-" idw "s", "check"; for (i = 1; i <= n; i++) printf "  %-" w "s", nodes[i]; printf "\n"
    for (j = 1; j <= m; j++) {
        printf "    %-" idw "s", ids[j]
        for (i = 1; i <= n; i++) printf "  %-" w "s", (cell[ids[j], nodes[i]] == "" ? "-" : cell[ids[j], nodes[i]])
        printf "\n"
    }
    bad = 0
    for (i = 1; i <= n; i++) {
        node = nodes[i]
        if (!(node in results)) {
            bad = 1
            printf "  %s: %s did not run: %s\n", node, (what == "" ? "the check" : what), (other[node] == "" ? "no output" : other[node])
        } else if (node in fails) {
            bad = 1
            printf "  %s:\n%s", node, fails[node]
        }
    }
    exit bad
}
