# After a launch: the GPU memory is held by my server, on as many GPUs as
# it should use. "The server is up" can hide a server that fell back to
# fewer GPUs (a tp flag not passed through), or one that never reached the
# GPUs at all while an old process still holds them. nvidia-smi says which
# process holds what; this plan waits until the memory is the server's.
#
#   lockstep run examples/gpu/gpu-held.hcl -var gpus=8 -var server='sglang::scheduler'
#
# In a serving plan, put the wait after the launch, on the GPU host's
# target. The processes are matched by name because the server's GPU
# workers are its children with names of their own (sglang::scheduler_TP0,
# VllmWorker...). Without a GPU here, the repository's stand-in for
# nvidia-smi shows it at work:
#
#   PATH=$PWD/steps/testdata/nvidia-smi:$PATH NVIDIA_SMI_FIXTURE=h100-loaded \
#     lockstep run examples/gpu/gpu-held.hcl -var gpus=8

plan "gpu-held" {
  description = "Wait until the server's own processes hold memory on every GPU it should use"
}

variable "gpus" {
  type        = number
  default     = 8
  description = "on how many GPUs the server must hold memory"
  validation {
    condition     = var.gpus >= 1 && floor(var.gpus) == var.gpus
    error_message = "gpus is a whole number, at least 1."
  }
}

variable "server" {
  type        = string
  default     = "sglang::scheduler"
  description = "regular expression on the names of the server's GPU processes"
  validation {
    condition     = can(regexall(var.server, ""))
    error_message = "server must be a valid regular expression."
  }
}

variable "min_held_mib" {
  type        = number
  default     = 1024
  description = "memory a process must hold on a GPU to count (weights and KV cache, not a bare CUDA context)"
}

variable "timeout" {
  type        = string
  default     = "10m"
  description = "how long loading the weights may take"
}

step "wait" "held" {
  description = "The server's processes hold at least min_held_mib on gpus GPUs; no other process holds that much"
  timeout     = var.timeout
  interval    = "2s"

  probe "gpu" "gpus" {}

  # A process's name is null where the driver will not tell (some
  # containers): it never counts as the server's, nor as another's.
  postcondition {
    condition = length(distinct([
      for p in probe.gpus.processes : p.gpu_index
      if can(regex(var.server, p.name)) && (p.used_memory_mib == null ? 0 : p.used_memory_mib) >= var.min_held_mib
    ])) >= var.gpus
    error_message = "processes named like ${var.server} hold ${var.min_held_mib} MiB or more on ${length(distinct([
      for p in probe.gpus.processes : p.gpu_index
      if can(regex(var.server, p.name)) && (p.used_memory_mib == null ? 0 : p.used_memory_mib) >= var.min_held_mib
    ]))} of the ${var.gpus} GPUs the server should use"
  }
  abort_if {
    condition = length([
      for p in probe.gpus.processes : p
      if p.name != null && !can(regex(var.server, p.name)) && (p.used_memory_mib == null ? 0 : p.used_memory_mib) >= var.min_held_mib
    ]) > 0
    error_message = "another process holds GPU memory: ${join(", ", [
      for p in probe.gpus.processes : "pid ${p.pid} (${p.name == null ? "unknown" : p.name}) ${p.used_memory_mib} MiB on GPU ${p.gpu_index == null ? "?" : p.gpu_index}"
      if p.name != null && !can(regex(var.server, p.name)) && (p.used_memory_mib == null ? 0 : p.used_memory_mib) >= var.min_held_mib
    ])}"
  }
}
