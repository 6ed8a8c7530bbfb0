#!/usr/bin/env bash
# all.sh: every benchmark behind the README's "Measured" section, one
# after another on this machine, each side by side with its anchors (wrk,
# tail -F, a Go exec loop, ansible-playbook, AIPerf...), then one table of
# what each row measured: the README's figures are this script's output,
# with the date and the command.
#
# Each row's full output is kept in the output folder (-o, default a
# fresh temp dir that is kept); the table goes to standard output and to
# OUT/table.md. A row whose tool is missing prints "skipped: why" in its
# result instead of failing the rest.
#
# usage: bench/all.sh [-o OUTDIR] [-q] [-only ROW[,ROW...]]
#   -q     quick: fewer rounds and shorter loads (for checking the script)
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out="" quick=no only=""
while [ $# -gt 0 ]; do
	case $1 in
	-o) out=$2; shift 2 ;;
	-q) quick=yes; shift ;;
	-only) only=,$2,; shift 2 ;;
	*) echo "usage: $0 [-o OUTDIR] [-q] [-only ROW[,ROW...]]" >&2; exit 2 ;;
	esac
done
out=${out:-$(mktemp -d /tmp/lockstep-bench.XXXXXX)}
mkdir -p "$out"
cd "$repo" || exit 2

rows=()
# row NAME WHAT COMMAND SUMMARY...: runs COMMAND (a shell line, from the
# repository), keeps its output in OUT/NAME.txt and takes as the result
# what SUMMARY (a function of this script and its arguments) prints
# reading that output on stdin, its lines joined with "; ".
row() {
	local name=$1 what=$2 cmd=$3 result rc
	shift 3
	if [ -n "$only" ] && [[ $only != *",$name,"* ]]; then
		return
	fi
	echo "== $name: $cmd" >&2
	bash -c "$cmd" >"$out/$name.txt" 2>&1
	rc=$?
	if [ $rc -eq 2 ] && grep -q "not found" "$out/$name.txt"; then
		result="skipped: $(grep -m1 "not found" "$out/$name.txt")"
	elif [ $rc -ne 0 ]; then
		result="FAILED (exit $rc): $(tail -n 3 "$out/$name.txt" | tr '\n' ' ')"
	else
		result=$("$@" <"$out/$name.txt" | sed 's/[[:space:]][[:space:]]*/ /g' | paste -sd ';' | sed 's/;/; /g')
		result=${result:-"(nothing to summarize: see $out/$name.txt)"}
	fi
	rows+=("| $what | \`${cmd//|/\\|}\` | $result |")
	echo "   $result" >&2
}

# lines REGEX: the lines of the output that match.
lines() { grep -E "$1"; }

# ratio A B: for each sub-benchmark (steps=N) of Go benchmarks A and B,
# A's cpu-ns/op (else its ns/op) over B's.
ratio() {
	awk -v a="$1" -v b="$2" '
	/^Benchmark/ {
		split($1, p, "/"); k = p[1]; sub(/^Benchmark/, "", k); s = p[2]; sub(/-[0-9]+$/, "", s)
		v = $3; for (i = 3; i < NF; i++) if ($(i+1) == "cpu-ns/op") v = $i
		val[k "/" s] = v; if (!(s in seen)) { seen[s] = 1; order[++n] = s }
	}
	END { for (i = 1; i <= n; i++) { s = order[i]; if (val[b "/" s] > 0) printf "%s: %.2fx (%.1f against %.1f ms)\n", s, val[a "/" s] / val[b "/" s], val[a "/" s] / 1e6, val[b "/" s] / 1e6 } }'
}

if [ $quick = yes ]; then r=1 d=2 n=20; else r=3 d=5 n=200; fi

row http "HTTP load against nginx, 64 connections, beside wrk and hey" \
	"bench/http-load.sh -r $r -d $d -c 64" lines '^ratio'
row ssh-steps "20 SSH steps against a loopback sshd, beside a warm ssh script and ansible-playbook" \
	"bench/ssh-steps.sh -r $((r + 2))" lines '^whole|^per step|^lockstep per step'
row ssh-load "a load through an SSH target beside the same load run locally" \
	"bench/ssh-load.sh -r $r -d $d -c 64" lines '^ratio'
row detect "a wait noticing a log line, from the write to the step confirmed" \
	"go test ./runner -run '^\$' -bench DetectionLatency -benchtime 20x" lines '^Benchmark'
row validate "validating generated plans of 100, 1,000, 10,000 steps, CPU beside hcl's own parse" \
	"go test ./plans -run '^\$' -bench 'Validate\$|HCLSyntaxOnly' -benchtime 3x -benchmem" ratio Validate HCLSyntaxOnly
row pacing "open model: how late the pacer sends at 500/s, beside a Go timer" \
	"go test ./loads -run '^\$' -bench PacingLateness -benchtime 1x" lines '^Benchmark'
row loglines "a wait noticing a log line, beside tail -F | grep -m1 (local), and over SSH beside one round trip" \
	"CI=true go test ./runner -run '^\$' -bench LogLineWait -benchtime 20x" lines '^Benchmark'
row runsteps "a local run step of true at 100, 1,000, 10,000 steps, beside a Go exec loop" \
	"go test ./runner -run '^\$' -bench LocalRunSteps -benchtime 1x" lines '^Benchmark'
row openai-mem "OpenAI load memory at concurrency 1024 (peak live heap) as it runs longer" \
	"go test ./loads -run '^\$' -bench OpenAIMemory -benchtime 1x" lines '^Benchmark'
row openai-cpu "OpenAI load CPU: reading one 64-token stream" \
	"go test ./loads -run '^\$' -bench ReadStream -benchtime 2000x -benchmem" lines '^Benchmark'
row leftovers "a run step's look for what its command left, over SSH, beside a session round trip" \
	"CI=true go test ./targets -run '^\$' -bench 'BenchmarkSSH/(MembersLeftNothing|RoundTripNoBashrc|WorkerRoundTrip)\$' -benchtime 30x" lines '^Benchmark'
row sweep "a sweep of 5 levels beside 5 steps of the same load; a report of 100 attempts" \
	"bench/sweep.sh -r $r" lines '^median|^claim|^report'
row llm-cpu "client CPU of an OpenAI streaming load beside AIPerf and GuideLLM" \
	"bench/llm-peers.sh -r 0 -C $((n * 5))" lines 'per 1,?000|ratio'

{
	echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') by \`bench/all.sh$([ $quick = yes ] && echo ' -q')\` on $(nproc) cores (shared; load average $(cut -d' ' -f1-3 /proc/loadavg)), commit $(git rev-parse --short HEAD)."
	echo
	echo "| what | command | result |"
	echo "|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee "$out/table.md"
echo "outputs: $out" >&2
