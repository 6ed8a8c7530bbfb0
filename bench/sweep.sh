#!/usr/bin/env bash
# sweep.sh: what a sweep costs, and how fast a report renders.
#
# 1. A sweep of 5 levels (concurrency = [1, 2, 4, 8, 16], one benchmark
#    step) against 5 benchmark steps of the same load, one level each, in
#    one plan, against the demo server (examples/demoserver, OpenAI
#    chat completions, a token every 1 ms): per round, each plan once, the
#    benchmark steps' durations from their step_finished events summed.
#    The claim: the sweep costs no more than the 5 steps plus 1 s.
# 2. lockstep report of 100 real attempts (a matrix of 100 attempts of a
#    plan whose one step sweeps 3 levels of an http load): the wall time
#    of `lockstep report -o FILE`, median of 5. The claim: under 1 s.
#
# usage: bench/sweep.sh [-r ROUNDS] [-n REQUESTS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 requests=64
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift 2 ;;
	-n) requests=$2; shift 2 ;;
	*) echo "usage: $0 [-r ROUNDS] [-n REQUESTS]" >&2; exit 2 ;;
	esac
done
dir=$(mktemp -d /tmp/lockstep-sweep.XXXXXX)
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"
need jq curl python3 go
build_lockstep
start_demoserver 1ms

levels=(1 2 4 8 16)
{
	echo 'plan "sweep" {}'
	echo 'variable "url" { type = string }'
	echo 'variable "requests" { type = number }'
	echo 'step "benchmark" "sweep" {'
	echo '  load "openai" {'
	echo '    url = var.url'
	echo "    concurrency = [$(IFS=,; echo "${levels[*]}")]"
	echo '    requests = var.requests'
	echo '    max_tokens = 16'
	echo '    warmup = "200ms"'
	echo '  }'
	echo '}'
} >"$dir/sweep.hcl"
{
	echo 'plan "steps" {}'
	echo 'variable "url" { type = string }'
	echo 'variable "requests" { type = number }'
	for c in "${levels[@]}"; do
		echo "step \"benchmark\" \"c$c\" {"
		echo '  load "openai" {'
		echo '    url = var.url'
		echo "    concurrency = $c"
		echo '    requests = var.requests'
		echo '    max_tokens = 16'
		echo '    warmup = "200ms"'
		echo '  }'
		echo '}'
	done
} >"$dir/steps.hcl"

# took PLAN: the seconds its benchmark steps took, summed, from the
# step_finished events; a step not confirmed stops the bench.
took() {
	"$lockstep" run "$1" --json --records "$dir/records" -var "url=$url" -var "requests=$requests" >"$dir/run.json" || {
		echo "bench: lockstep run $1 failed" >&2
		jq -r 'select(.type == "step_finished") | "\(.step.addr): \(.outcome.status) \(.outcome.reason // "")"' "$dir/run.json" >&2
		exit 1
	}
	jq -s '[.[] | select(.type == "step_finished" and .step.kind == "benchmark") | .outcome.duration_ns] | add / 1e9' "$dir/run.json"
}

echo "sweep of ${#levels[@]} levels against ${#levels[@]} steps, $requests requests a level, demo server at $url"
: >"$dir/rounds"
for r in $(seq "$rounds"); do
	s=$(took "$dir/sweep.hcl")
	t=$(took "$dir/steps.hcl")
	echo "round $r: sweep ${s}s, steps ${t}s" | tee -a "$dir/rounds"
	echo "sweep $s" >>"$dir/results"
	echo "steps $t" >>"$dir/results"
done
ms=$(median_of "$dir/results" sweep 2)
mt=$(median_of "$dir/results" steps 2)
echo "median: sweep ${ms}s, 5 steps ${mt}s, difference $(awk -v a="$ms" -v b="$mt" 'BEGIN { printf "%+.3f", a - b }')s"
awk -v a="$ms" -v b="$mt" 'BEGIN { exit !(a <= b + 1) }' && echo "claim holds: the sweep costs no more than the 5 steps + 1 s" ||
	{ echo "claim FAILS: the sweep costs more than the 5 steps + 1 s"; exit 1; }

# 100 attempts: a matrix over a dummy variable, each a 3-level http sweep
# of the demo server's /health.
cat >"$dir/many.hcl" <<-HCL
	plan "many" {}
	variable "url" { type = string }
	variable "i" {
	  type    = number
	  default = 0
	}
	step "benchmark" "health" {
	  load "http" {
	    url         = var.url
	    concurrency = [1, 2, 4]
	    requests    = 20
	  }
	}
HCL
"$lockstep" run "$dir/many.hcl" --records "$dir/records" -var "url=$demo_base/health" \
	--matrix "i=$(seq -s, 1 100)" >"$dir/many.out" 2>&1 || { tail -5 "$dir/many.out" >&2; exit 1; }
for _ in 1 2 3 4 5; do
	s=$(date +%s.%N)
	"$lockstep" report "$dir/many.hcl" --records "$dir/records" -o "$dir/report.html"
	e=$(date +%s.%N)
	awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }'
done >"$dir/renders"
n=$(grep -c '^<tr><td>' "$dir/report.html")
echo "report of $n attempts ($(wc -c <"$dir/report.html") bytes of HTML, $(grep -o '<svg' "$dir/report.html" | wc -l) charts): renders $(paste -sd' ' "$dir/renders") s"
mr=$(median <"$dir/renders")
echo "median render: ${mr}s"
awk -v a="$mr" 'BEGIN { exit !(a < 1) }' && echo "claim holds: a report of $n attempts renders in under 1 s" ||
	{ echo "claim FAILS: a report of $n attempts takes ${mr}s"; exit 1; }
