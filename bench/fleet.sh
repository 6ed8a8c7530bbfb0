#!/usr/bin/env bash
# fleet.sh: one command step and one wait-for-port step on 1, 10 and 50
# hosts, each host a network namespace with its own OpenSSH sshd
# (targets/netnstest, through bench/fleet/hosts), timed for:
#   ansible   ansible-playbook bench/fleet/playbook.yml, forks = 50,
#             pipelining on, Ansible's own ControlMaster/ControlPersist; a
#             cold run (first connections) and ROUNDS warm runs
#   floor     bench/fleet/floor: the least a tool can do for the same two
#             steps (per host at once: one x/crypto/ssh connection with
#             the host key verified, one exec of `true`, then one port
#             check), what this machine allows
#   lockstep  the same two steps as a plan on a fleet target
#             (bench/fleet/fleet.hcl), one `lockstep run` each round
# and what it costs to make and tear down the hosts themselves. For the
# floor and lockstep it also counts where the CPU went: the tool's own
# (user + system from its rusage, its children's, ssh -G, included), the
# hosts' (every sshd listener's time with all it started and reaped:
# connections, sessions, shells) and the whole machine's (/proc/stat,
# other jobs included), with the tool's and the hosts' per host.
#
# Each host's ~/.bashrc reads as empty (a bind mount in the host's mount
# namespace; the file is untouched): on a machine where it is heavy (pyenv
# init) every session would pay it, and the figures would be the shell's.
# Ansible gets its own venv from PyPI (ansible-core, pinned), made once
# in ${LOCKSTEP_BENCH_CACHE:-~/.cache/lockstep-bench}/venv-ansible.
# LOCKSTEP=BINARY times that lockstep (another commit's) instead of this
# tree's; LOCKSTEP_BASE=BINARY times that one too, as "base", in the same
# rounds (before and after a change, under the same load).
#
# Needs root (network namespaces), iproute2, openssh-server and -client,
# go, python3 (3.11 for this ansible-core).
#
# Figures, and what they say: bench/README.md, "fleet.sh".
#
# usage: bench/fleet.sh [-r ROUNDS] [-s "1 10 50"]
set -euo pipefail

rounds=3 sizes="1 10 50"
while getopts "r:s:" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	s) sizes=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-s \"1 10 50\"]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "fleet: needs root, to make network namespaces" >&2; exit 2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/lockstep-fleet.XXXXXX)
# need, median_of, and the cleanup of $dir.
. "$repo/bench/lib.sh"
need ip ssh sshd go python3

# ansible-core 2.19 is the last line whose controller runs on Python 3.11.
ansible_spec=ansible-core==2.19.14
cache=${LOCKSTEP_BENCH_CACHE:-$HOME/.cache/lockstep-bench}
venv=$cache/venv-ansible
if [ ! -e "$venv/.installed-$ansible_spec" ]; then
	echo "fleet: installing $ansible_spec into $venv" >&2
	rm -rf "$venv"
	mkdir -p "$cache"
	python3 -m venv "$venv"
	"$venv/bin/pip" install -q --disable-pip-version-check "$ansible_spec"
	touch "$venv/.installed-$ansible_spec"
fi
export PATH=$venv/bin:$PATH

(cd "$repo" && go build -o "$dir/hosts" ./bench/fleet/hosts && go build -o "$dir/floor" ./bench/fleet/floor)
# build_lockstep: this tree's, or $LOCKSTEP (another commit's, to compare).
build_lockstep

# hosts_list is $FLEET_HOSTS as an HCL list: ["n1", "n2", ...].
hosts_list() {
	local out= h
	for h in $FLEET_HOSTS; do out="$out${out:+, }\"$h\""; done
	echo "[$out]"
}

# 50 hosts: 50 sshd listeners and their sessions, 50 ansible forks each
# with an ssh master and its sockets: far below the limits below, printed
# so that a run on a smaller machine shows what it had.
[ "$(ulimit -n)" -ge 4096 ] || ulimit -n 4096
limits="open files $(ulimit -n), processes $(ulimit -u), pid_max $(cat /proc/sys/kernel/pid_max)"

ms_since() {
	local tenths=$((($(date +%s%N) - $1) / 100000))
	echo "$((tenths / 10)).$((tenths % 10))"
}

# Where the CPU of a timed run went, from /proc (to the clock tick, 10 ms):
# the tool's own (its user and system time and its children's, ssh -G
# included, from its rusage), the hosts' (every sshd listener's time and
# that of all it started and reaped: the connections, their sessions and
# shells, read once they have been reaped), and the whole machine's
# (/proc/stat, busy time of every core, other jobs included).
hz=$(getconf CLK_TCK)

# sshd_stats: the /proc stat files of the hosts' sshd listeners, the
# children of bench/fleet/hosts (measure's parent) named sshd.
sshd_stats() {
	local p
	for p in $(cat /proc/"$PPID"/task/*/children); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = sshd ] && echo "/proc/$p/stat"
	done
}

# sshd_children: the processes the hosts' sshd listeners have not
# reaped yet (their connections: ansible's ControlPersist masters live on
# between its runs), one a line, sorted.
sshd_children() {
	local f pid
	for f in $sshds; do
		pid=${f#/proc/} pid=${pid%/stat}
		tr ' ' '\n' <"/proc/$pid/task/$pid/children"
	done | grep . | sort
}

# hosts_cpu_ms [BEFORE]: the hosts' CPU so far, in ms, once the
# connections that were not among BEFORE (sshd_children's list) have
# ended and been reaped (at most 5 s): a connection's time reaches its
# listener's when it is reaped.
hosts_cpu_ms() {
	local i
	for i in $(seq 100); do
		[ -z "$(comm -13 <(echo "${1:-}") <(sshd_children))" ] && break
		sleep 0.05
	done
	# utime, stime, cutime, cstime: fields 14-17, 12-15 after the comm.
	awk -v hz="$hz" '{ sub(/^.*\) /, ""); t += $12 + $13 + $14 + $15 } END { print int(t * 1000 / hz) }' $sshds
}

# machine_cpu_ms: every core's busy time so far, in ms.
machine_cpu_ms() {
	awk -v hz="$hz" '$1 == "cpu" { print int(($2 + $3 + $4 + $7 + $8 + $9) * 1000 / hz) }' /proc/stat
}

# timed TOOL N COMMAND...: runs COMMAND, and appends to $dir/results its
# wall time ("TOOL N MS") and its CPU split ("TOOL_cpu N OWN_MS HOSTS_MS
# MACHINE_MS"). The wall time ends when the command exits; the CPU
# counts until the hosts reaped what it left (its connections' ends).
timed() {
	local tool=$1 n=$2 start h0 m0 rc=0 kids
	shift 2
	kids=$(sshd_children)
	h0=$(hosts_cpu_ms "$kids") m0=$(machine_cpu_ms)
	start=$(date +%s%N)
	/usr/bin/time -f '%U %S' -o "$dir/time" "$@" || rc=$?
	echo "$tool $n $(ms_since "$start")" >>"$dir/results"
	echo "${tool}_cpu $n $(awk '{ print int(($1 + $2) * 1000) }' "$dir/time") $(($(hosts_cpu_ms "$kids") - h0)) $(($(machine_cpu_ms) - m0))" >>"$dir/results"
	return $rc
}

# measure N: runs inside bench/fleet/hosts, with the fleet's FLEET_*
# variables; appends "TOOL N MS" lines to $dir/results.
measure() {
	local n=$1 inv=$dir/inventory-$n cfg=$dir/ansible-$n.cfg start cp r sshds
	sshds=$(sshd_stats)
	[ "$(wc -w <<<"$sshds")" = "$n" ] || { echo "fleet: found $(wc -w <<<"$sshds") sshd listeners for $n hosts" >&2; exit 1; }
	{
		echo "[fleet]"
		printf '%s\n' $FLEET_HOSTS
		echo "[fleet:vars]"
		# The hosts by name through the fleet's ssh_config: address, user,
		# key, and known_hosts with StrictHostKeyChecking=yes.
		echo "ansible_ssh_common_args='-F $FLEET_SSH_CONFIG'"
	} >"$inv"
	cat >"$cfg" <<-CONF
		[defaults]
		inventory = $inv
		forks = 50
		host_key_checking = True
		retry_files_enabled = False
		interpreter_python = /usr/bin/python3
		[ssh_connection]
		pipelining = True
		control_path_dir = $dir/cp-$n
	CONF
	run_ansible() {
		ANSIBLE_CONFIG=$cfg ansible-playbook "$repo/bench/fleet/playbook.yml" >"$dir/ansible-$n.out" 2>&1 || {
			echo "fleet: ansible-playbook on $n hosts failed:" >&2
			tail -30 "$dir/ansible-$n.out" >&2
			exit 1
		}
		grep -q "ok=2 .*failed=0" "$dir/ansible-$n.out" || { echo "fleet: ansible did not do 2 tasks on every host" >&2; exit 1; }
		[ "$(grep -c 'ok=2 ' "$dir/ansible-$n.out")" = "$n" ] || { echo "fleet: ansible's recap does not list $n hosts with ok=2" >&2; exit 1; }
	}
	# run_lockstep NAME BINARY: one timed run of the plan.
	run_lockstep() {
		(cd "$dir" && export LOCKSTEP_VAR_hosts="$(hosts_list)" LOCKSTEP_VAR_fleet_config=$FLEET_SSH_CONFIG &&
			timed "$1" "$n" "$2" run --records "$dir/records-$n" "$repo/bench/fleet/fleet.hcl" >"$dir/$1-$n.out" 2>&1) || {
			echo "fleet: $1 ($2) on $n hosts failed:" >&2
			tail -30 "$dir/$1-$n.out" >&2
			exit 1
		}
		grep -q "run.run: confirmed on $n/$n hosts" "$dir/$1-$n.out" && grep -q "wait.wait: confirmed on $n/$n hosts" "$dir/$1-$n.out" ||
			{ echo "fleet: $1 did not confirm both steps on every host" >&2; exit 1; }
	}
	start=$(date +%s%N)
	run_ansible
	echo "ansible_cold $n $(ms_since "$start")" >>"$dir/results"
	for r in $(seq "$rounds"); do
		start=$(date +%s%N)
		run_ansible
		echo "ansible $n $(ms_since "$start")" >>"$dir/results"

		# The floor: the least a tool can do for the same two steps
		# (bench/fleet/floor: one connection, one exec and one port
		# check a host), what this machine allows.
		timed floor "$n" "$dir/floor" >"$dir/floor-$n.out" 2>&1 || {
			echo "fleet: the floor on $n hosts failed:" >&2
			tail -30 "$dir/floor-$n.out" >&2
			exit 1
		}

		# The same two steps as a lockstep plan on a fleet target, in the
		# same round and against the same hosts: one `lockstep run`, its
		# own connections made and closed within it (no master kept
		# between runs, as ansible keeps its ControlPersist sockets).
		run_lockstep lockstep "$lockstep"
		[ -z "${LOCKSTEP_BASE:-}" ] || run_lockstep base "$LOCKSTEP_BASE"
	done
	for cp in "$dir/cp-$n"/*; do
		[ -S "$cp" ] && ssh -o ControlPath="$cp" -O exit fleet >/dev/null 2>&1 || true
	done
}
export dir repo rounds lockstep hz
export -f measure ms_since hosts_list sshd_stats sshd_children hosts_cpu_ms machine_cpu_ms timed

echo "fleet bench: ${sizes// /, } hosts, $rounds warm rounds after 1 cold run; $(nproc) cores (shared); load average $(cut -d" " -f1-3 /proc/loadavg); $limits; $(ansible-playbook --version 2>/dev/null | sed -n 1p); $(date -u '+%Y-%m-%d %H:%M UTC')"
for n in $sizes; do
	"$dir/hosts" -n "$n" -hide "$HOME/.bashrc" -results "$dir/results" -- bash -c 'measure "$1"' measure "$n"
done

# get TOOL N [FIELD]: the median of TOOL's figures on N hosts (FIELD 3,
# the first after N, unless told), "" when none.
get() {
	local v
	v=$(awk -v t="$1" -v n="$2" -v f="${3:-3}" '$1 == t && $2 == n { print $f }' "$dir/results")
	[ -z "$v" ] || median <<<"$v"
}
printf '%-6s %9s %12s %17s %12s %12s %9s\n' hosts setup_s teardown_s ansible_cold_ms ansible_ms lockstep_ms floor_ms
for n in $sizes; do
	lockstep=$(get lockstep "$n")
	printf '%-6s %9s %12s %17s %12s %12s %9s\n' "$n" "$(get setup "$n")" "$(get teardown "$n")" \
		"$(get ansible_cold "$n")" "$(get ansible "$n")" "${lockstep:-?}" "$(get floor "$n")"
done
# Where the CPU went (medians, ms): the tool's own, the hosts' sshds and
# all they ran, and the whole machine's in the same span (other jobs in).
printf '\n%-6s %-9s %8s %8s %9s %11s %14s %16s\n' hosts tool wall_ms own_cpu hosts_cpu machine_cpu own_per_host hosts_per_host
for n in $sizes; do
	for tool in floor ${LOCKSTEP_BASE:+base} lockstep; do
		own=$(get "${tool}_cpu" "$n" 3) hosts=$(get "${tool}_cpu" "$n" 4)
		printf '%-6s %-9s %8s %8s %9s %11s %14s %16s\n' "$n" "$tool" "$(get "$tool" "$n")" "$own" "$hosts" "$(get "${tool}_cpu" "$n" 5)" \
			"$(awk -v c="$own" -v n="$n" 'BEGIN { printf "%.1f", c / n }')" "$(awk -v c="$hosts" -v n="$n" 'BEGIN { printf "%.1f", c / n }')"
	done
done
echo
first=${sizes%% *} last=${sizes##* }
for tool in ansible floor ${LOCKSTEP_BASE:+base} lockstep; do
	awk -v a="$(get $tool "$first")" -v b="$(get $tool "$last")" -v f="$first" -v l="$last" -v t="$tool" \
		'BEGIN { if (a > 0) printf "%s on %s hosts / on %s: %.2fx%s\n", t, l, f, b / a, t == "lockstep" ? " (at most 2x)" : "" }'
done
for n in $sizes; do
	awk -v a="$(get ansible "$n")" -v b="$(get lockstep "$n")" -v c="$(get floor "$n")" -v n="$n" \
		'BEGIN { if (b > 0) printf "on %s hosts ansible / lockstep: %.1fx (at least 10x); lockstep / floor: %.2fx\n", n, a / b, b / c }'
done
