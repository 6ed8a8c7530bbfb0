#!/usr/bin/env bash
# resume.sh: how long from `lockstep run` to the benchmark's first
# request, for a full run (launch, load the shards, wait, assert) and for
# `lockstep run --from benchmark.load` against the server the full run
# kept (adopt it, re-confirm the steps before, then the load).
#
#   bench/resume.sh [-r ROUNDS] [-l LOAD_TIME]
#
# Each round: one full run with --keep, then ROUNDS runs --from
# benchmark.load against the server it kept; the last one with --stop.
# The point timed is the benchmark step's step_action event in --json
# (emitted as the load starts, before its first send), against the time
# taken just before lockstep was started. Figures from a run that did not
# confirm are not printed: the script stops with its reason.
set -euo pipefail
rounds=5 load_time=5s
while getopts r:l: o; do
	case $o in
	r) rounds=$OPTARG ;;
	l) load_time=$OPTARG ;;
	*) exit 2 ;;
	esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
source "$repo/bench/lib.sh"
need jq python3 go

go build -o "$dir/lockstep" "$repo/cmd/lockstep"
go build -o "$dir/demoserver" "$repo/examples/demoserver"
port=$(free_port)
cp "$repo/bench/resume.hcl" "$dir/plan.hcl"

# to_first_request ARGS...: runs lockstep run on the plan with ARGS and
# prints the seconds from its start to the benchmark's load starting.
to_first_request() {
	local t0 out
	t0=$(date +%s.%N)
	out=$("$dir/lockstep" run "$dir/plan.hcl" --json --records "$dir/records" \
		-var demoserver="$dir/demoserver" -var port="$port" -var load_time="$load_time" "$@") || {
		echo "bench: lockstep run $* did not confirm:" >&2
		jq -r 'select(.type == "step_finished" and .outcome.status != "confirmed" and .outcome.status != "skipped") | "  \(.step.addr): \(.outcome.status): \(.outcome.reason)"' <<<"$out" >&2
		exit 1
	}
	jq -r --arg t0 "$t0" 'select(.type == "step_action" and .step.addr == "benchmark.load") | .time' <<<"$out" |
		python3 -c 'import sys, datetime; t = sys.stdin.read().strip(); t = t[:26] + "+00:00" if t.endswith("Z") else t; print("%.3f" % (datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() - float(sys.argv[1])))' "$t0"
}

full=() from=()
printf '%-8s %-28s %s\n' round run seconds_to_first_request
for r in $(seq 1 "$rounds"); do
	f=$(to_first_request --keep)
	full+=("$f")
	printf '%-8s %-28s %s\n' "$r" "full (launch, load $load_time)" "$f"
	for i in $(seq 1 "$rounds"); do
		stop=()
		[ "$i" -eq "$rounds" ] && stop=(--stop)
		s=$(to_first_request --from benchmark.load "${stop[@]}")
		from+=("$s")
		printf '%-8s %-28s %s\n' "$r.$i" "--from benchmark.load" "$s"
	done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo
echo "median full run to the first request:         $(median "${full[@]}") s (${#full[@]} runs)"
echo "median --from benchmark.load to the first one: $(median "${from[@]}") s (${#from[@]} runs; goal < 1 s)"
