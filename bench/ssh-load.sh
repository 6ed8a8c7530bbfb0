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
# usage: bench/ssh-load.sh [-r ROUNDS] [-c CONNECTIONS] [-d SECONDS] [-e]
# LOCKSTEP=/path/to/lockstep uses that binary instead of building this tree.
set -euo pipefail
shopt -s inherit_errexit

rounds=3 conns=64 secs=5 sides="local ssh"
while getopts "r:c:d:e" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	c) conns=$OPTARG ;;
	d) secs=$OPTARG ;;
	e) sides="local ssh ssh+exec" ;;
	*) echo "usage: $0 [-r ROUNDS] [-c CONNECTIONS] [-d SECONDS] [-e]" >&2; exit 2 ;;
	esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/lockstep-ssh-load.XXXXXX)
. "$repo/bench/lib.sh"
need nginx jq curl python3 ssh-keygen
[ -x /usr/sbin/sshd ] || { echo "bench: /usr/sbin/sshd not found (apt-get install -y openssh-server)" >&2; exit 2; }
[ -n "${LOCKSTEP:-}" ] || need go
build_lockstep
start_nginx

# start_sshd: as targets/sshtest does, an sshd of our own on a free port
# of 127.0.0.1 accepting this user with a fresh key; known_hosts holds its
# one host key, so the host is verified as on any real target. Sets
# ssh_port.
start_sshd() {
	local user
	user=$(id -un)
	ssh-keygen -q -t ed25519 -N '' -C bench-host -f "$dir/host_ed25519"
	ssh-keygen -q -t ed25519 -N '' -C bench-user -f "$dir/user_ed25519"
	cp "$dir/user_ed25519.pub" "$dir/authorized_keys"
	chmod 600 "$dir/authorized_keys"
	# sshd refuses to start without its privilege separation directory,
	# which only the openssh-server service normally creates.
	[ "$(id -u)" != 0 ] || mkdir -p /run/sshd
	ssh_port=$(free_port)
	cat >"$dir/sshd_config" <<-CONF
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
		AllowTcpForwarding yes
		LogLevel VERBOSE
	CONF
	/usr/sbin/sshd -t -f "$dir/sshd_config" -p "$ssh_port"
	/usr/sbin/sshd -D -e -f "$dir/sshd_config" -p "$ssh_port" 2>"$dir/sshd.log" &
	pids+=($!)
	echo "[127.0.0.1]:$ssh_port $(cut -d' ' -f1,2 "$dir/host_ed25519.pub")" >"$dir/known_hosts"
	for _ in $(seq 50); do
		# An SSH server, not merely something on the port, says SSH- first.
		if timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$ssh_port && head -c 4 <&3" 2>/dev/null | grep -q '^SSH-'; then
			ssh_user=$user
			return
		fi
		sleep 0.1
	done
	echo "bench: sshd did not answer on 127.0.0.1:$ssh_port" >&2
	cat "$dir/sshd.log" >&2
	exit 1
}
start_sshd

# The ssh plan is bench/http-load.hcl with only its target changed, and the
# target it names.
plan_local=$repo/bench/http-load.hcl
plan_ssh=$dir/http-load-ssh.hcl
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
plan_exec=$dir/http-load-ssh-exec.hcl
awk '/^step "benchmark"/ { print "step \"run\" \"exec\" {\n  target  = target.box\n  command = \"true\"\n}\n" } { print }' "$plan_ssh" >"$plan_exec"

echo "$(date -u +%FT%TZ) nginx 1 worker at $url; sshd on 127.0.0.1:$ssh_port ($(/usr/sbin/sshd -V 2>&1 | head -1)); $conns connections, ${secs}s per run, $rounds rounds; $(nproc) cores (shared)"
printf '%-6s %-8s %12s %10s %10s\n' round target requests/s p99_ms p999_ms
for r in $(seq "$rounds"); do
	order=$sides
	[ $((r % 2)) = 1 ] || order=$(tr ' ' '\n' <<<"$sides" | tac | tr '\n' ' ')
	for side in $order; do
		case $side in
		local) plan=$plan_local want=local ;;
		ssh) plan=$plan_ssh want=box ;;
		ssh+exec) plan=$plan_exec want=box ;;
		esac
		line=$(run_plan "$plan")
		read -r rps p99 p999 target <<<"$line"
		[ "$target" = "$want" ] || { echo "bench: the $side run ran on target $target" >&2; exit 1; }
		printf '%-6s %-8s %12.0f %10.3f %10.3f\n' "$r" "$side" "$rps" "$p99" "$p999"
		echo "$side $rps $p99 $p999" >>"$dir/results"
	done
done

echo
printf '%-8s %12s %10s %10s\n' median requests/s p99_ms p999_ms
for side in $sides; do
	rps=$(median_of "$dir/results" "$side" 2)
	p99=$(median_of "$dir/results" "$side" 3)
	p999=$(median_of "$dir/results" "$side" 4)
	printf '%-8s %12.0f %10.3f %10.3f\n' "$side" "$rps" "$p99" "$p999"
	echo "$side $rps $p99 $p999" >>"$dir/medians"
done
awk '$1 == "local" { l = $2; lp = $3; lq = $4 } $1 != "local" { s[$1] = $2; sp[$1] = $3; sq[$1] = $4; n[++k] = $1 }
	END { for (i = 1; i <= k; i++) printf "ratio %s/local  requests/s %.2f  p99 %.2f  p999 %.2f\n", n[i], s[n[i]] / l, sp[n[i]] / lp, sq[n[i]] / lq }' "$dir/medians"
