#!/usr/bin/env bash
# ssh-load.sh: what it costs to run a load against an SSH target. On a
# target over SSH lockstep still generates the load here, and carries each
# of its connections through the one SSH connection (a direct-tcpip
# channel) to the host's loopback. This starts a throwaway OpenSSH sshd on
# 127.0.0.1 (its own config, host key, user key and known_hosts in a temp
# dir) and nginx, and runs bench/http-load.hcl twice per round: as it is
# (target local, straight to nginx) and with only its target line changed
# to the sshd (target box, through sshd to the same nginx), same
# connections and duration, the two interleaved and alternating which goes
# first. Prints requests/s, p99 and p999 for both, the medians and
# ssh/local.
#
# -l openai does the same with bench/openai-load.hcl (streaming chat
# completions, 32 tokens each) against examples/demoserver generating a
# token every 5 ms, and prints output tokens/s, TTFT and TPOT.
#
# Both sides share the machine: here the sshd that forwards the load
# competes with nginx and lockstep for the same cores, which a real remote
# host's sshd does not; the local loopback hop is nearly free, which a real
# network is not. The ratio measures the SSH path itself (encryption,
# channel multiplexing, sshd's forwarding), not a network.
#
# -e adds a third side, ssh+exec: the ssh plan with a `run "true"` step on
# the box before the benchmark. sshd turns Nagle off (TCP_NODELAY) on its
# client connection only when a session runs a command; a connection that
# only forwards keeps Nagle on, and the load's small responses then wait
# for delayed ACKs (the 40 ms tail). -e shows what that costs.
#
# usage: bench/ssh-load.sh [-r ROUNDS] [-c CONNECTIONS] [-d SECONDS] [-e] [-l http|openai]
# LOCKSTEP=/path/to/lockstep uses that binary instead of building this tree.
set -euo pipefail
shopt -s inherit_errexit

rounds=3 conns=64 secs=5 sides="local ssh" load=http
while getopts "r:c:d:el:" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	c) conns=$OPTARG ;;
	d) secs=$OPTARG ;;
	e) sides="local ssh ssh+exec" ;;
	l) load=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-c CONNECTIONS] [-d SECONDS] [-e] [-l http|openai]" >&2; exit 2 ;;
	esac
done
case $load in
http) metrics=(requests_per_s latency_p99_ms latency_p999_ms) ;;
openai) metrics=(output_tokens_per_s ttft_median_ms ttft_p99_ms tpot_median_ms) ;;
*) echo "ssh-load: -l $load: the loads are http and openai" >&2; exit 2 ;;
esac

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/lockstep-ssh-load.XXXXXX)
. "$repo/bench/lib.sh"
need jq curl python3 ssh-keygen /usr/bin/time
[ -x /usr/sbin/sshd ] || { echo "bench: /usr/sbin/sshd not found (apt-get install -y openssh-server)" >&2; exit 2; }
[ -n "${LOCKSTEP:-}" ] || need go
build_lockstep

# start_demoserver: examples/demoserver answering chat completions with a
# token every 5 ms (so TPOT has a known floor). Sets url and server.
if [ "$load" = http ]; then
	need nginx
	start_nginx
	server="nginx 1 worker"
else
	start_demoserver 5ms
	server="demoserver (5 ms a token)"
fi

start_sshd

# The ssh plan is bench/http-load.hcl with only its target changed, and the
# target it names.
plan_local=$repo/bench/$load-load.hcl
plan_ssh=$dir/$load-load-ssh.hcl
sed 's/^\(  *\)target *= *target\.local$/\1target = target.box/' "$plan_local" >"$plan_ssh"
[ "$(diff "$plan_local" "$plan_ssh" | grep -c '^>')" = 1 ] || { echo "bench: could not retarget $plan_local (no single 'target = target.local' line)" >&2; exit 1; }
cat >>"$plan_ssh" <<-HCL

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

# ssh+exec: the same, after a command on the box over the same connection.
plan_exec=$dir/$load-load-ssh-exec.hcl
awk '/^step "benchmark"/ { print "step \"run\" \"exec\" {\n  target  = target.box\n  command = \"true\"\n}\n" } { print }' "$plan_ssh" >"$plan_exec"

# row LABEL LABEL VALUE...: one line of the table, rates without decimals.
row() {
	printf '%-6s %-8s' "$1" "$2"
	shift 2
	local i=0 v
	for v in "$@"; do
		case ${metrics[i]} in
		*_per_s) printf ' %20.0f' "$v" ;;
		*) printf ' %20.3f' "$v" ;;
		esac
		i=$((i + 1))
	done
	echo
}

echo "$(date -u +%FT%TZ) $server at $url; sshd on 127.0.0.1:$ssh_port ($(/usr/sbin/sshd -V 2>&1 | head -1)); $conns connections, ${secs}s per run, $rounds rounds; $(nproc) cores (shared)"
printf '%-6s %-8s' round target
printf ' %20s' "${metrics[@]}"
echo
for r in $(seq "$rounds"); do
	order=$sides
	[ $((r % 2)) = 1 ] || order=$(tr ' ' '\n' <<<"$sides" | tac | tr '\n' ' ')
	for side in $order; do
		case $side in
		local) plan=$plan_local want=local ;;
		ssh) plan=$plan_ssh want=box ;;
		ssh+exec) plan=$plan_exec want=box ;;
		esac
		line=$(run_plan "$plan" "${metrics[@]}")
		read -r -a values <<<"$line"
		target=${values[-1]}
		unset 'values[-1]'
		[ "$target" = "$want" ] || { echo "bench: the $side run ran on target $target" >&2; exit 1; }
		row "$r" "$side" "${values[@]}"
		echo "$side ${values[*]}" >>"$dir/results"
	done
done

echo
printf '%-6s %-8s' median target
printf ' %20s' "${metrics[@]}"
echo
for side in $sides; do
	values=()
	for i in "${!metrics[@]}"; do
		values+=("$(median_of "$dir/results" "$side" $((i + 2)))")
	done
	row median "$side" "${values[@]}"
	echo "$side ${values[*]}" >>"$dir/medians"
done
awk -v names="${metrics[*]}" 'BEGIN { k = split(names, name, " ") }
	{ for (i = 2; i <= NF; i++) v[$1, i] = $i }
	$1 != "local" { side[++n] = $1 }
	END {
		for (j = 1; j <= n; j++) {
			printf "ratio %s/local ", side[j]
			for (i = 1; i <= k; i++) printf " %s %.2f", name[i], v[side[j], i + 1] / v["local", i + 1]
			printf "\n"
		}
	}' "$dir/medians"
