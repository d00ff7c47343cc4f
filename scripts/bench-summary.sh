#!/usr/bin/env bash
# bench-summary.sh LOG: the one table `make bench` ends with — every figure
# a benchmark of LOG reported (go test -bench lines: name, then value/unit
# pairs), one row per figure, and the DBOS peer on the same SQLite measured
# in the same run when ../shared/peers/dbos exists (PEERS=dir to point
# elsewhere, PEERS=none to skip), with cairn's ratio to it.
set -euo pipefail
log=${1:?usage: bench-summary.sh LOG}
peers=${PEERS:-$(cd "$(dirname "$0")/../.." && pwd)/shared/peers}

echo
echo "## make bench — summary ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(go env GOVERSION))"
echo
printf '| %-58s | %14s | %-14s |\n' benchmark value unit
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..60})" "$(printf -- '-%.0s' {1..16})" "$(printf -- '-%.0s' {1..16})"
# A benchmark that prints while it runs (CostPerAgentStep's report) has
# its name on a line of its own and its figures on a later line that
# starts with the iteration count: the figures go with the name before.
awk 'function row(name, from,   i) {
	for (i = from; i < NF; i += 2) {
		if ($(i+1) == "B/op" || $(i+1) == "allocs/op") continue
		printf "| %-58s | %14s | %-14s |\n", name, $i, $(i+1)
	}
}
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	if ($2 ~ /^[0-9]+$/ && $4 == "ns/op") { row(name, 3); pending = "" } else pending = name
	next
}
/^[ \t]+[0-9]+[ \t]+[0-9.e+]+ ns\/op/ && pending != "" { row(pending, 2); pending = "" }' "$log"

p50=$(awk '/^BenchmarkAgentStep-/ { for (i = 3; i < NF; i += 2) if ($(i+1) == "p50-ms/turn") print $i }' "$log" | tail -1)
p50s=$(awk '/^BenchmarkAgentStepInSession-/ { for (i = 3; i < NF; i += 2) if ($(i+1) == "p50-ms/turn") print $i }' "$log" | tail -1)
tps=$(awk '/^BenchmarkConcurrentSessions/ { for (i = 3; i < NF; i += 2) if ($(i+1) == "turns/s") print $i }' "$log" | tail -1)
cpu=$(awk '/^BenchmarkConcurrentSessions/ { for (i = 3; i < NF; i += 2) if ($(i+1) == "cpu-ms/turn") print $i }' "$log" | tail -1)
if [ "${PEERS:-}" != none ] && [ -x "$peers/dbos/run.sh" ]; then
	echo
	echo "DBOS Transact for Go on SQLite, same machine, same run ($peers/dbos/run.sh sqlite):"
	line=$(N=${N:-300} "$peers/dbos/run.sh" sqlite 2>/dev/null | grep '^RESULT' | tail -1 || true)
	echo "  $line"
	dp50=$(sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p' <<<"$line")
	dtps=$(sed -n 's/.*turns_per_s_c8=\([0-9.]*\).*/\1/p' <<<"$line")
	dcpu=$(sed -n 's/.*cpu_ms_per_turn=\([0-9.]*\).*/\1/p' <<<"$line")
	if [ -n "$dp50" ] && [ -n "$p50" ]; then
		awk -v a="$p50" -v b="$dp50" -v c="$tps" -v d="$dtps" -v e="$cpu" -v f="$dcpu" -v g="$p50s" 'BEGIN {
			printf "  cairn/DBOS: p50 per turn %.2f in a fresh session", a / b
			if (g != "") printf ", %.2f in a continuing one", g / b
			printf " (target <= 0.8)"
			if (c != "" && d != "") printf ", turns/s at 8 %.2f (target >= 1)", c / d
			if (e != "" && f != "") printf ", CPU per turn %.2f", e / f
			printf "\n"
		}'
	fi
else
	echo
	echo "(no DBOS peer at $peers/dbos: PEERS=dir to compare in the same run)"
fi
