#!/usr/bin/env bash
# growth.sh: how lockstep's costs grow with the plan and the load, for the
# growth curves of bench/README.md (issue "Performance: ahead of every
# peer, flat as plans and loads grow"):
#   validate   `lockstep validate` of a generated plan of N run steps
#   local      `lockstep run` of that plan (N steps running `true` locally):
#              per step, beside a Go exec loop's cost of `true` per call
#   ssh        the same plan on a loopback OpenSSH sshd (a target block)
#   rss        an OpenAI load (concurrency C) against examples/demoserver
#              with no token delay, for 1, 10 and 60 s: the client's peak
#              RSS, from /usr/bin/time
# N is 100, 1,000 and 10,000 (-n to choose). Prints a table per part.
#
# usage: bench/growth.sh [-n "100 1000 10000"] [-c CONCURRENCY] [-d "1 10 60"] [-p PARTS]
#   PARTS: any of validate,local,ssh,rss (default all)
set -euo pipefail

sizes="100 1000 10000" conc=1024 durations="1 10 60" parts=validate,local,ssh,rss
while getopts "n:c:d:p:" opt; do
	case $opt in
	n) sizes=$OPTARG ;;
	c) conc=$OPTARG ;;
	d) durations=$OPTARG ;;
	p) parts=$OPTARG ;;
	*) echo "usage: $0 [-n SIZES] [-c CONCURRENCY] [-d SECONDS] [-p PARTS]" >&2; exit 2 ;;
	esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/lockstep-growth.XXXXXX)
. "$repo/bench/lib.sh"
need go python3 curl jq
part() { [[ ",$parts," == *",$1,"* ]]; }

build_lockstep
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores (shared), load average $(cut -d' ' -f1-3 /proc/loadavg), commit $(cd "$repo" && git rev-parse --short HEAD)"

# plan N TARGET: a plan of N run steps of `true` on TARGET ("local" or
# "box", the ssh target of ssh_port/ssh_user/known_hosts), in $dir.
plan() {
	local n=$1 target=$2 f=$dir/plan-$1-$2.hcl
	{
		echo "plan \"growth\" {}"
		if [ "$target" = box ]; then
			cat <<-HCL
				target "box" {
				  ssh {
				    host          = "127.0.0.1"
				    port          = $ssh_port
				    user          = "$ssh_user"
				    identity_file = "$dir/user_ed25519"
				    known_hosts   = "$dir/known_hosts"
				  }
				}
			HCL
		fi
		for i in $(seq "$n"); do
			printf 'step "run" "s%d" {\n  target  = target.%s\n  command = "true"\n}\n' "$i" "$target"
		done
	} >"$f"
	echo "$f"
}

# seconds CMD...: wall seconds CMD takes (it must succeed).
seconds() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >"$dir/last.out" 2>&1 || { echo "growth: $* failed:" >&2; tail -5 "$dir/last.out" >&2; exit 1; }
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}

# The anchor for a local run step: a Go loop running `true` (fork, exec,
# wait), per call.
cat >"$dir/execloop.go" <<'GO'
package main

import (
	"fmt"
	"os/exec"
	"time"
)

func main() {
	const n = 300
	t := time.Now()
	for range n {
		if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
			panic(err)
		}
	}
	fmt.Printf("%.3f\n", float64(time.Since(t).Microseconds())/1000/n)
}
GO
(cd "$dir" && go mod init execloop >/dev/null 2>&1 && go build -o execloop . )

if part validate || part local; then
	echo
	printf '%-8s %12s %14s %16s %14s\n' steps validate_ms validate_us/step run_ms/step exec_loop_ms
	for n in $sizes; do
		f=$(plan "$n" local)
		v=$(seconds "$lockstep" validate "$f")
		r=$(seconds "$lockstep" run "$f" --records "$dir/records")
		e=$("$dir/execloop")
		printf '%-8s %12.1f %14.1f %16.3f %14.3f\n' "$n" "$(echo "$v * 1000" | bc -l)" "$(echo "$v * 1000000 / $n" | bc -l)" \
			"$(echo "$r * 1000 / $n" | bc -l)" "$e"
	done
fi

if part ssh; then
	need ssh-keygen
	[ -x /usr/sbin/sshd ] || { echo "bench: /usr/sbin/sshd not found (apt-get install -y openssh-server)" >&2; exit 2; }
	start_sshd
	echo
	printf '%-8s %14s\n' steps ssh_ms/step
	for n in $sizes; do
		f=$(plan "$n" box)
		r=$(seconds "$lockstep" run "$f" --records "$dir/records")
		printf '%-8s %14.3f\n' "$n" "$(echo "$r * 1000 / $n" | bc -l)"
	done
fi

if part rss; then
	start_demoserver 0s
	cat >"$dir/rss.hcl" <<-HCL
		variable "url" {}
		variable "duration" {}
		step "benchmark" "load" {
		  load "openai" {
		    url         = var.url
		    model       = "demo"
		    concurrency = $conc
		    duration    = var.duration
		    max_tokens  = 64
		  }
		}
	HCL
	echo
	printf '%-9s %12s %12s %14s\n' seconds peak_rss_mb requests output_tokens/s
	for d in $durations; do
		/usr/bin/time -f '%M' -o "$dir/rss" "$lockstep" run "$dir/rss.hcl" --json --records "$dir/records" \
			-var "url=$url" -var "duration=${d}s" >"$dir/rss.json" 2>"$dir/rss.err" ||
			{ echo "growth: the load of ${d}s failed:" >&2; tail -5 "$dir/rss.err" >&2; exit 1; }
		read -r reqs tps < <(jq -r 'select(.type == "step_finished") | "\(.outcome.metrics.requests) \(.outcome.metrics.output_tokens_per_s)"' "$dir/rss.json")
		printf '%-9s %12.0f %12s %14.0f\n' "$d" "$(echo "$(tail -1 "$dir/rss") / 1024" | bc -l)" "$reqs" "$tps"
	done
fi
