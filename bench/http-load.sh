#!/usr/bin/env bash
# http-load.sh: lockstep's HTTP load, run as a user runs it (the lockstep
# binary and a plan, bench/http-load.hcl), beside wrk and hey against nginx
# serving a small static file on 127.0.0.1, with the same connections and
# duration. Rounds are interleaved so that drift on a shared machine hits
# all three alike. Prints requests/s, p99 and the CPU time each tool used
# per 1,000 requests, per tool and round, then the medians over rounds and
# the ratios lockstep/wrk and lockstep/hey.
#
# lockstep's figures are the benchmark step's metrics from `lockstep run
# --json`; the time lockstep takes to start and read the plan is outside
# the measured duration, as wrk's and hey's start is outside theirs. Its
# CPU time is read from /proc at the step's start and end events (so its
# start-up is left out too); wrk's and hey's is their whole run's
# (/usr/bin/time), their start-up included, a few ms at most.
#
# usage: bench/http-load.sh [-r ROUNDS] [-c CONNECTIONS] [-d SECONDS] [-t WRK_THREADS]
# LOCKSTEP=/path/to/lockstep uses that binary instead of building this tree.
set -euo pipefail
shopt -s inherit_errexit

rounds=3 conns=64 secs=5 threads=2
while getopts "r:c:d:t:" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	c) conns=$OPTARG ;;
	d) secs=$OPTARG ;;
	t) threads=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-c CONNECTIONS] [-d SECONDS] [-t WRK_THREADS]" >&2; exit 2 ;;
	esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/lockstep-http-load.XXXXXX)
. "$repo/bench/lib.sh"
need nginx wrk hey jq curl python3 /usr/bin/time
[ -n "${LOCKSTEP:-}" ] || need go
build_lockstep
start_nginx

# Each runner prints "REQUESTS_PER_S P99_MS CPU_MS_PER_1000_REQUESTS".
run_lockstep() {
	local line rps p99 n _
	line=$(run_plan "$repo/bench/http-load.hcl" requests_per_s latency_p99_ms requests)
	read -r rps p99 n _ <<<"$line"
	echo "$rps $p99 $(awk -v c="$(cat "$dir/run.cpu_ms")" -v n="$n" 'BEGIN { print c * 1000 / n }')"
}
run_wrk() {
	timed_cpu_ms "$dir/cpu" wrk -t "$threads" -c "$conns" -d "${secs}s" --latency "$url" >"$dir/wrk.out"
	awk -v c="$(cat "$dir/cpu")" '
		/requests in/ { n = $1 }
		/Requests\/sec:/ { rps = $2 }
		/^ +99%/ { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
			p = (u == "us") ? v / 1000 : (u == "s") ? v * 1000 : v }
		/Non-2xx|Socket errors/ { print "wrk: " $0 > "/dev/stderr" }
		END { print rps, p, c * 1000 / n }' "$dir/wrk.out"
}
run_hey() {
	timed_cpu_ms "$dir/cpu" hey -c "$conns" -z "${secs}s" "$url" >"$dir/hey.out"
	awk -v c="$(cat "$dir/cpu")" '
		/Total:/ { t = $2 }
		/Requests\/sec:/ { rps = $2 }
		/99% in/ { p = $3 * 1000 }
		/Error distribution/ { print "hey: errors" > "/dev/stderr" }
		END { print rps, p, c * 1000 / (rps * t) }' "$dir/hey.out"
}

echo "$(date -u +%FT%TZ) nginx 1 worker at $url; $conns connections, ${secs}s per run, $rounds rounds, wrk -t $threads; $(nproc) cores (shared)"
printf '%-6s %-9s %12s %10s %14s\n' round tool requests/s p99_ms cpu_ms_per_1k
for r in $(seq "$rounds"); do
	for tool in lockstep wrk hey; do
		line=$("run_$tool")
		read -r rps p99 cpu <<<"$line"
		printf '%-6s %-9s %12.0f %10.3f %14.2f\n' "$r" "$tool" "$rps" "$p99" "$cpu"
		echo "$tool $rps $p99 $cpu" >>"$dir/results"
	done
done

echo
printf '%-9s %12s %10s %14s\n' median requests/s p99_ms cpu_ms_per_1k
for tool in lockstep wrk hey; do
	rps=$(median_of "$dir/results" "$tool" 2)
	p99=$(median_of "$dir/results" "$tool" 3)
	cpu=$(median_of "$dir/results" "$tool" 4)
	printf '%-9s %12.0f %10.3f %14.2f\n' "$tool" "$rps" "$p99" "$cpu"
	eval "rps_$tool=$rps p99_$tool=$p99 cpu_$tool=$cpu"
done
awk -v l="$rps_lockstep" -v w="$rps_wrk" -v h="$rps_hey" -v lp="$p99_lockstep" -v wp="$p99_wrk" -v hp="$p99_hey" \
	-v lc="$cpu_lockstep" -v wc="$cpu_wrk" -v hc="$cpu_hey" 'BEGIN {
	printf "ratio requests/s   lockstep/wrk %.2f  lockstep/hey %.2f\n", l / w, l / h
	printf "ratio p99          lockstep/wrk %.2f  lockstep/hey %.2f\n", lp / wp, lp / hp
	printf "ratio CPU/request  lockstep/wrk %.2f  lockstep/hey %.2f\n", lc / wc, lc / hc
}'
