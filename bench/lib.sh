# lib.sh: what the bench scripts (http-load.sh, ssh-load.sh, growth.sh...)
# share, sourced after they set `dir` (a fresh temp dir) and `repo`: a
# throwaway nginx, lockstep built from this tree, one run of
# bench/http-load.hcl read from its --json events, and medians.

# need TOOL...: fail with the package to install when a tool is missing.
need() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || {
			echo "bench: $tool not found (apt-get install -y $tool)" >&2
			exit 2
		}
	done
}

# free_port prints a TCP port free on 127.0.0.1 right now.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Processes this script started, stopped on exit whatever happens.
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_nginx: one worker serving a 17-byte file on 127.0.0.1 with no
# access log and keep-alive without a request limit, so that the server is
# the same cheap constant for every tool. Sets url.
start_nginx() {
	local nginx port
	nginx=$(command -v nginx || echo /usr/sbin/nginx)
	port=$(free_port)
	mkdir -p "$dir/www" "$dir/tmp"
	printf 'hello from nginx\n' >"$dir/www/index.html"
	chmod 755 "$dir"
	chmod -R a+rX "$dir/www"
	cat >"$dir/nginx.conf" <<-CONF
		daemon off;
		worker_processes 1;
		pid $dir/nginx.pid;
		error_log $dir/nginx-error.log warn;
		events { worker_connections 4096; }
		http {
			access_log off;
			client_body_temp_path $dir/tmp/body;
			proxy_temp_path $dir/tmp/proxy;
			fastcgi_temp_path $dir/tmp/fastcgi;
			uwsgi_temp_path $dir/tmp/uwsgi;
			scgi_temp_path $dir/tmp/scgi;
			keepalive_requests 10000000;
			server {
				listen 127.0.0.1:$port;
				root $dir/www;
			}
		}
	CONF
	"$nginx" -c "$dir/nginx.conf" -e "$dir/nginx-error.log" &
	pids+=($!)
	url="http://127.0.0.1:$port/index.html"
	for _ in $(seq 50); do
		curl -sf -o /dev/null "$url" 2>/dev/null && return
		sleep 0.1
	done
	echo "bench: nginx did not answer on $url" >&2
	cat "$dir/nginx-error.log" >&2
	exit 1
}

# build_lockstep: the binary of this tree, or $LOCKSTEP if set. Sets lockstep.
build_lockstep() {
	if [ -n "${LOCKSTEP:-}" ]; then
		lockstep=$LOCKSTEP
		return
	fi
	lockstep=$dir/lockstep
	(cd "$repo" && go build -o "$lockstep" ./cmd/lockstep)
}

# run_plan PLAN METRIC...: one attempt of a load plan at url, conns and
# secs; prints the named metrics of the benchmark step (benchmark.load),
# then the target it ran on, from its step_finished event. A step that is
# not confirmed (errors, no request, a timeout) stops the bench with its
# reason: figures from a failed run would be read as figures. The CPU
# time lockstep spent from the step's start to its exit (its start-up and
# plan decoding left out, as wrk's and hey's are; its record's writing
# in) goes to $dir/run.cpu_ms.
run_plan() {
	local plan=$1 out=$dir/run.json line cpu0="" rc=0 child _
	shift
	: >"$out"
	coproc LS { exec /usr/bin/time -f '%U %S' -o "$dir/run.time" "$lockstep" run "$plan" --json --records "$dir/records" \
		-var "url=$url" -var "concurrency=$conns" -var "duration=${secs}s" 2>"$dir/run.err"; }
	local pid=$LS_PID fd
	# bash unsets LS once the coprocess has exited, which it may do
	# before its last lines are read: read from a copy of its stdout.
	exec {fd}<&"${LS[0]}"
	while IFS= read -r line <&"$fd"; do
		printf '%s\n' "$line" >>"$out"
		case $line in
		'{"type":"step_started"'*'"addr":"benchmark.load"'*)
			# lockstep is time's one child, and runs the load for seconds yet.
			read -r child _ <"/proc/$pid/task/$pid/children" || true # no newline at its end
			cpu0=$(cpu_ms "$child") ;;
		esac
	done
	exec {fd}<&-
	wait "$pid" || rc=$?
	if [ $rc -ne 0 ]; then
		echo "bench: lockstep run $plan failed:" >&2
		jq -r 'select(.type == "step_finished" and .outcome.status != "confirmed")
			| "  \(.step.addr) on \(.step.target): \(.outcome.status): \(.outcome.reason // "")  \(.outcome.metrics // {} | tostring)"' "$out" >&2 || true
		tail -5 "$dir/run.err" >&2
		exit 1
	fi
	if [ -n "$cpu0" ]; then
		awk -v c0="$cpu0" '{ print int(($1 + $2) * 1000) - c0 }' "$dir/run.time" >"$dir/run.cpu_ms"
	else
		echo "bench: no CPU time read for benchmark.load" >&2
		exit 1
	fi
	line=$(jq -r --arg names "$*" 'select(.type == "step_finished" and .step.addr == "benchmark.load")
		| .outcome.metrics as $m | [($names | split(" ")[] | $m[.] // "missing"), .step.target] | join(" ")' "$out")
	[ -n "$line" ] || { echo "bench: no step_finished event for benchmark.load in $out" >&2; exit 1; }
	case " $line " in *" missing "*) echo "bench: $plan: a metric of [$*] is missing: $line" >&2; exit 1 ;; esac
	echo "$line"
}

# cpu_ms PID: the CPU time (user and system) process PID has used, in ms,
# from /proc (to the kernel's clock tick, 10 ms).
cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print int(($12 + $13) * 1000 / hz) }' "/proc/$1/stat"
}

# timed_cpu_ms FILE COMMAND...: runs COMMAND, its output to stdout, and
# writes the CPU time it and its children used, in ms, to FILE.
timed_cpu_ms() {
	local file=$1
	shift
	/usr/bin/time -f '%U %S' -o "$file.time" "$@"
	awk '{ print int(($1 + $2) * 1000) }' "$file.time" >"$file"
}

# median: the median of the numbers on stdin, one a line.
median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# median_of RESULTS NAME FIELD: the median of FIELD (2 requests/s, 3 p99, ...)
# over the lines of RESULTS whose first field is NAME.
median_of() {
	awk -v n="$2" -v f="$3" '$1 == n { print $f }' "$1" | median
}

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
	# Every remote command runs under the login shell, which reads
	# ~/.bashrc; where that is heavy (pyenv init: ~180 ms here) it swamps
	# what lockstep costs. As root, sshd runs in a private mount namespace
	# where ~/.bashrc reads as empty (the file is untouched), unless
	# SSHD_BASHRC=real.
	local ns=()
	if [ "$(id -u)" = 0 ] && [ "${SSHD_BASHRC:-empty}" = empty ] && [ -e "$HOME/.bashrc" ]; then
		: >"$dir/empty-bashrc"
		ns=(unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$dir/empty-bashrc" "$HOME/.bashrc")
	fi
	"${ns[@]}" /usr/sbin/sshd -D -e -f "$dir/sshd_config" -p "$ssh_port" 2>"$dir/sshd.log" &
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

# start_demoserver DELAY: examples/demoserver, built from this tree, on a
# free port of 127.0.0.1, DELAY (a Go duration) between the tokens of an
# answer, ready at once. Sets demo_base and url (its chat completions).
start_demoserver() {
	local port delay=${1:-0s}
	need go
	(cd "$repo" && go build -o "$dir/demoserver" ./examples/demoserver)
	port=$(free_port)
	"$dir/demoserver" --port "$port" --model demo --load-time 0s --warmup 0s --token-delay "$delay" >"$dir/demoserver.log" 2>&1 &
	pids+=($!)
	demo_base=http://127.0.0.1:$port
	url=$demo_base/v1/chat/completions
	for _ in $(seq 100); do
		curl -sf -o /dev/null "$demo_base/health" 2>/dev/null && return
		sleep 0.1
	done
	echo "bench: demoserver did not come up on $demo_base" >&2
	cat "$dir/demoserver.log" >&2
	exit 1
}
