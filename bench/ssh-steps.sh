#!/usr/bin/env bash
# ssh-steps.sh: the same 20 steps (8 commands, 6 waits on a listening port,
# 6 file checks: exists, size, SHA-256) against a loopback OpenSSH sshd,
# three ways, rounds interleaved so that drift on a shared machine hits all
# alike:
#   lockstep  lockstep run bench/ssh-steps/plan.hcl (one connection of its
#             own per run, as every run opens one)
#   ssh       bench/ssh-steps/steps.sh: one `ssh` call per check through a
#             ControlMaster opened before timing (warm, as a user has it)
#   ansible   ansible-playbook bench/ssh-steps/playbook.yml, pipelining on,
#             Ansible's own ControlMaster/ControlPersist (warm after the
#             untimed warm-up round)
# plus lockstep on a 1-step plan (its fixed cost: start-up, plan, connect,
# records) and the Go benchmark of a bare session round trip on a reused
# connection (targets BenchmarkSSH/RoundTrip, and /WorkerRoundTrip for the
# worker shells that carry probes). Prints each round, the medians, and the
# ratios ansible/lockstep, ssh/lockstep, and lockstep's per-step cost over
# the bare round trip.
#
#
# Every remote command runs under the user's login shell, and bash reads
# ~/.bashrc for a command sent over ssh: on a machine where it is heavy
# (pyenv init: ~180 ms here) that cost swamps what the tools cost. By
# default sshd runs in a private mount namespace where ~/.bashrc reads as
# empty (the file itself is untouched), so the figures are the tools'; -b
# keeps the user's real ~/.bashrc, as does a run without root (the
# namespace needs it; the first line of output says which).
# -p ends with bench/ssh-steps/probecost: the target calls the steps are
# made of, timed one kind at a time on the same sshd.
#
# usage: bench/ssh-steps.sh [-r ROUNDS] [-n BENCH_ITERATIONS] [-b] [-p]
set -euo pipefail

rounds=5 iters=200 bashrc=empty parts=no
while getopts "r:n:bp" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	n) iters=$OPTARG ;;
	b) bashrc=real ;;
	p) parts=yes ;;
	*) echo "usage: $0 [-r ROUNDS] [-n BENCH_ITERATIONS] [-b] [-p]" >&2; exit 2 ;;
	esac
done

SSHD=/usr/sbin/sshd
[ -x "$SSHD" ] || { echo "ssh-steps: $SSHD missing: apt-get install openssh-server" >&2; exit 2; }
for tool in ssh ssh-keygen go python3; do
	command -v "$tool" >/dev/null || { echo "ssh-steps: $tool not found" >&2; exit 2; }
done
if ! command -v ansible-playbook >/dev/null; then
	echo "ssh-steps: installing ansible (apt-get install -y ansible)" >&2
	apt-get install -y ansible >&2
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
plans=$repo/bench/ssh-steps
dir=$(mktemp -d /tmp/lockstep-ssh-steps.XXXXXX)
# free_port, median_of; its cleanup is replaced by the one below.
. "$repo/bench/lib.sh"
sshd_pid='' www_pid=''
cleanup() {
	set +e # a failed kill or wait must not cut the cleanup short
	[ -S "$dir/cm" ] && ssh -o ControlPath="$dir/cm" -O exit box 2>/dev/null
	for cp in "$dir"/ansible-cp/*; do
		[ -S "$cp" ] && ssh -o ControlPath="$cp" -O exit box 2>/dev/null
	done
	[ -n "$www_pid" ] && kill "$www_pid" 2>/dev/null && wait "$www_pid" 2>/dev/null
	[ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null && wait "$sshd_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

answers() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1 && head -c ${#2} <&3" 2>/dev/null | grep -q "^$2"; }

# sshd as in targets/sshtest: its own host key, the user's key authorized,
# a known_hosts holding the host key; no PAM, so it runs without a system
# service set up.
user=$(id -un)
ssh-keygen -q -t ed25519 -N '' -C bench-host -f "$dir/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C bench-user -f "$dir/user_ed25519"
cp "$dir/user_ed25519.pub" "$dir/authorized_keys"
ssh_port=$(free_port)
echo "[127.0.0.1]:$ssh_port $(cut -d' ' -f1,2 "$dir/host_ed25519.pub")" >"$dir/known_hosts"
cat >"$dir/sshd_config" <<CONF
ListenAddress 127.0.0.1
HostKey $dir/host_ed25519
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
PidFile none
MaxSessions 20
CONF
[ "$(id -u)" = 0 ] && mkdir -p /run/sshd
# The sshd here and the one the Go benchmark starts run under ns: with an
# empty ~/.bashrc or as they are. exec: $! is sshd itself.
ns=()
[ "$(id -u)" = 0 ] || bashrc=real
if [ $bashrc = empty ] && [ -e "$HOME/.bashrc" ]; then
	: >"$dir/empty"
	ns=(unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$dir/empty" "$HOME/.bashrc")
fi
"${ns[@]}" "$SSHD" -D -e -f "$dir/sshd_config" -p "$ssh_port" </dev/null >"$dir/sshd.log" 2>&1 &
sshd_pid=$!

# What the wait steps wait for: a listener on the host's loopback.
listen_port=$(free_port)
mkdir -p "$dir/www"
/usr/bin/python3 -m http.server --bind 127.0.0.1 --directory "$dir/www" "$listen_port" </dev/null >"$dir/www.log" 2>&1 &
www_pid=$!

# What the file checks check: 1 MiB of random bytes.
file=$dir/data.bin
head -c 1048576 /dev/urandom >"$file"
file_size=$(stat -c %s "$file")
file_sha256=$(sha256sum <"$file" | cut -c1-64)

for _ in $(seq 100); do
	answers "$ssh_port" SSH- && break
	sleep 0.1
done
answers "$ssh_port" SSH- || { echo "ssh-steps: sshd did not come up" >&2; cat "$dir/sshd.log" >&2; exit 1; }
for _ in $(seq 100); do
	(exec 3<>"/dev/tcp/127.0.0.1/$listen_port") 2>/dev/null && break
	sleep 0.1
done

(cd "$repo" && go build -o "$dir/lockstep" ./cmd/lockstep && go test -c -o "$dir/targets.test" ./targets &&
	go build -o "$dir/probecost" ./bench/ssh-steps/probecost)

export SSH_PORT=$ssh_port SSH_USER=$user SSH_KEY=$dir/user_ed25519 KNOWN_HOSTS=$dir/known_hosts
export CONTROL_PATH=$dir/cm LISTEN_PORT=$listen_port FILE=$file FILE_SIZE=$file_size FILE_SHA256=$file_sha256
vars=(-var "ssh_port=$ssh_port" -var "ssh_user=$user" -var "ssh_key=$SSH_KEY" -var "known_hosts=$KNOWN_HOSTS"
	-var "listen_port=$listen_port" -var "file=$file" -var "file_size=$file_size" -var "file_sha256=$file_sha256")

# Ansible: its own config only (none of the user's), the host key checked
# against our known_hosts, pipelining on, its default ssh_args
# (ControlMaster=auto, ControlPersist=60s) kept.
mkdir -p "$dir/ansible-cp"
cat >"$dir/ansible.cfg" <<CONF
[defaults]
inventory = $dir/inventory
host_key_checking = True
retry_files_enabled = False
interpreter_python = /usr/bin/python3
[ssh_connection]
pipelining = True
control_path_dir = $dir/ansible-cp
CONF
cat >"$dir/inventory" <<INV
box ansible_host=127.0.0.1 ansible_port=$ssh_port ansible_user=$user ansible_ssh_private_key_file=$SSH_KEY ansible_ssh_common_args='-o UserKnownHostsFile=$KNOWN_HOSTS -o StrictHostKeyChecking=yes -o BatchMode=yes'
INV
export ANSIBLE_CONFIG=$dir/ansible.cfg

# The ControlMaster the ssh script goes through, opened before timing.
ssh -o ControlMaster=yes -o ControlPath="$CONTROL_PATH" -o ControlPersist=600 -o BatchMode=yes \
	-o StrictHostKeyChecking=yes -o UserKnownHostsFile="$KNOWN_HOSTS" -i "$SSH_KEY" -p "$ssh_port" -l "$user" \
	-fN 127.0.0.1 </dev/null >"$dir/master.log" 2>&1

# Each runner succeeds or shows why it failed: a benchmark of failures
# measures nothing.
checked() {
	local name=$1
	shift
	"$@" >"$dir/out.$name" 2>&1 || { echo "ssh-steps: $name failed:" >&2; cat "$dir/out.$name" >&2; exit 1; }
}
# --json rather than --plain: the same work, and the step events carry each
# step's duration for the per-kind breakdown at the end.
run_lockstep() { checked lockstep "$dir/lockstep" run "$plans/plan.hcl" --json --records "$dir/records" "${vars[@]}"; }
run_lockstep1() { checked lockstep1 "$dir/lockstep" run "$plans/one-step.hcl" --plain --records "$dir/records" "${vars[@]}"; }
run_ssh() { checked ssh "$plans/steps.sh"; }
run_ansible() {
	checked ansible ansible-playbook "$plans/playbook.yml" -e "listen_port=$listen_port file=$file file_size=$file_size file_sha256=$file_sha256 ssh_user=$user"
}
ms_since() {
	local tenths=$((($(date +%s%N) - $1) / 100000))
	echo "$((tenths / 10)).$((tenths % 10))"
}
# The bare round trips, in ms: Run of `true` on a reused connection (the
# command marked, as a run step's), a script on a long-lived worker shell,
# and a session running `true` with nothing else.
run_bare() {
	(cd "$repo/targets" && "${ns[@]}" "$dir/targets.test" -test.run '^$' -test.bench '^BenchmarkSSH$/^(RoundTrip|WorkerRoundTrip|Session)$' \
		-test.benchtime "${iters}x") >"$dir/out.bare" 2>&1 || { cat "$dir/out.bare" >&2; exit 1; }
	awk '/ns\/op/ { k = $1 ~ /Worker/ ? 1 : $1 ~ /Session/ ? 2 : 0; for (i = 1; i < NF; i++) if ($(i + 1) == "ns/op") v[k] = $i / 1e6 }
		END { printf "%.2f %.2f %.2f\n", v[0], v[1], v[2] }' "$dir/out.bare"
}

echo "sshd on 127.0.0.1:$ssh_port as $user (~/.bashrc $bashrc), listener on :$listen_port, $rounds rounds after 1 untimed warm-up; $(nproc) cores (shared); $(date -u '+%Y-%m-%d %H:%M UTC')"
for tool in lockstep lockstep1 ssh ansible; do "run_$tool"; done

printf '%-6s %12s %14s %10s %12s %14s %14s %12s\n' round lockstep_ms lockstep1_ms ssh_ms ansible_ms roundtrip_ms worker_rt_ms session_ms
for r in $(seq "$rounds"); do
	line=$r
	for tool in lockstep lockstep1 ssh ansible; do
		start=$(date +%s%N)
		"run_$tool"
		ms=$(ms_since "$start")
		echo "$tool $ms" >>"$dir/results"
		line="$line $ms"
		[ "$tool" = lockstep ] && cat "$dir/out.lockstep" >>"$dir/events"
	done
	read -r rt wrt srt < <(run_bare)
	echo "roundtrip $rt" >>"$dir/results"
	echo "worker_rt $wrt" >>"$dir/results"
	echo "session $srt" >>"$dir/results"
	printf '%-6s %12s %14s %10s %12s %14s %14s %12s\n' $line "$rt" "$wrt" "$srt"
done

for tool in lockstep lockstep1 ssh ansible roundtrip worker_rt session; do
	eval "m_$tool=$(median_of "$dir/results" $tool 2)"
done
printf '%-6s %12s %14s %10s %12s %14s %14s %12s\n' median "$m_lockstep" "$m_lockstep1" "$m_ssh" "$m_ansible" "$m_roundtrip" "$m_worker_rt" "$m_session"
echo
awk -v l="$m_lockstep" -v l1="$m_lockstep1" -v s="$m_ssh" -v a="$m_ansible" -v rt="$m_roundtrip" -v wrt="$m_worker_rt" -v srt="$m_session" 'BEGIN {
	step = (l - l1) / 19
	printf "whole 20-step run:  ansible/lockstep %.1fx   ssh/lockstep %.2fx\n", a / l, s / l
	printf "per step:           lockstep %.2f ms (20-step minus 1-step, over 19)   ssh %.2f ms   ansible %.2f ms\n", step, s / 20, a / 20
	printf "per step:           ansible/lockstep %.1fx   ssh/lockstep %.2fx\n", a / 20 / step, s / 20 / step
	printf "lockstep per step / bare session round trip (%.2f ms): %.2fx   / worker round trip (%.2f ms): %.2fx\n", rt, step / rt, wrt, step / wrt
	printf "lockstep per step / a session of true alone, unmarked (%.2f ms): %.2fx\n", srt, step / srt
	printf "lockstep fixed cost (1-step plan): %.1f ms\n", l1
}'
# Where lockstep's time goes: the median step duration of each kind over
# every timed run (from the step_finished events).
/usr/bin/python3 - "$dir/events" "$m_roundtrip" <<'PY'
import json, statistics, sys
by = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("type") == "step_finished":
        by.setdefault(e["step"]["kind"], []).append(e["outcome"]["duration_ns"] / 1e6)
print("lockstep median step duration by kind: " + "   ".join(
    f"{k} {statistics.median(v):.1f} ms (n={len(v)})" for k, v in sorted(by.items())))
rt = float(sys.argv[2])
print("  / bare session round trip: " + "   ".join(
    f"{k} {statistics.median(v) / rt:.2f}x" for k, v in sorted(by.items())))
PY
if [ $parts = yes ]; then
	echo
	echo "the parts (median of 15 calls each, one connection):"
	"$dir/probecost" -port "$ssh_port" -user "$user" -key "$SSH_KEY" -known-hosts "$KNOWN_HOSTS" \
		-listen-port "$listen_port" -file "$file"
fi
