#!/usr/bin/env bash
# http-load.sh: lockstep's HTTP load beside wrk and hey, against nginx
# serving a small static file on 127.0.0.1, with the same connections and
# duration; rounds interleaved so that drift on a shared machine hits all
# three alike. Prints requests/s and p99 per tool and round, then the
# medians over rounds and the ratios lockstep/wrk and lockstep/hey.
#
# usage: bench/http-load.sh [-r ROUNDS] [-c CONNECTIONS] [-d SECONDS] [-t WRK_THREADS]
set -euo pipefail

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

for tool in nginx wrk hey go; do
	command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || { echo "http-load: $tool not found" >&2; exit 2; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/lockstep-http-load.XXXXXX)
chmod 755 "$dir"
nginx_pid=
cleanup() {
	[ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$dir/www" "$dir/tmp"
printf 'hello from nginx\n' >"$dir/www/index.html"
chmod -R a+rX "$dir/www"
cat >"$dir/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
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
"$NGINX" -c "$dir/nginx.conf" -e "$dir/error.log" &
nginx_pid=$!
url="http://127.0.0.1:$port/index.html"
for _ in $(seq 50); do
	curl -sf -o /dev/null "$url" 2>/dev/null && break
	sleep 0.1
done
curl -sf -o /dev/null "$url" || { echo "http-load: nginx did not come up" >&2; cat "$dir/error.log" >&2; exit 1; }

(cd "$repo" && go build -o "$dir/loadgen" ./bench/loadgen)

# Each runner prints "RPS P99_MS".
run_lockstep() {
	"$dir/loadgen" -url "$url" -c "$conns" -d "${secs}s" |
		python3 -c 'import json,sys; m=json.load(sys.stdin)["Metrics"]; assert m["errors"]==0, m; print(m["requests_per_s"], m["latency_p99_ms"])'
}
run_wrk() {
	wrk -t "$threads" -c "$conns" -d "${secs}s" --latency "$url" | awk '
		/Requests\/sec:/ { rps = $2 }
		/^ +99%/ { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
			p = (u == "us") ? v / 1000 : (u == "s") ? v * 1000 : v }
		/Non-2xx|Socket errors/ { print "wrk: " $0 > "/dev/stderr" }
		END { print rps, p }'
}
run_hey() {
	hey -c "$conns" -z "${secs}s" "$url" | awk '
		/Requests\/sec:/ { rps = $2 }
		/99% in/ { p = $3 * 1000 }
		END { print rps, p }'
}

echo "nginx 1 worker on 127.0.0.1:$port, $conns connections, ${secs}s per run, $rounds rounds, wrk -t $threads; $(nproc) cores (shared)"
printf '%-6s %-9s %12s %10s\n' round tool requests/s p99_ms
for r in $(seq "$rounds"); do
	for tool in lockstep wrk hey; do
		read -r rps p99 < <("run_$tool")
		printf '%-6s %-9s %12.0f %10.3f\n' "$r" "$tool" "$rps" "$p99"
		echo "$tool $rps $p99" >>"$dir/results"
	done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
printf '%-9s %12s %10s\n' median requests/s p99_ms
for tool in lockstep wrk hey; do
	rps=$(awk -v t=$tool '$1 == t { print $2 }' "$dir/results" | median)
	p99=$(awk -v t=$tool '$1 == t { print $3 }' "$dir/results" | median)
	printf '%-9s %12.0f %10.3f\n' "$tool" "$rps" "$p99"
	eval "rps_$tool=$rps"
done
awk -v l="$rps_lockstep" -v w="$rps_wrk" -v h="$rps_hey" \
	'BEGIN { printf "ratio requests/s  lockstep/wrk %.2f  lockstep/hey %.2f\n", l / w, l / h }'
