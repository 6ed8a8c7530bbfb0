# A pre-flight check before launching a model server: the GPUs are there,
# the driver answers, and nothing holds their memory. A server from an
# earlier attempt that was never stopped (a `nohup ... &` over ssh, a
# crashed client) keeps its memory; the next launch then dies with out of
# memory minutes into loading, or worse, the old server answers the
# checks. This plan says so before anything starts, with who holds what.
#
#   lockstep run examples/gpu/gpu-free.hcl
#   lockstep run examples/gpu/gpu-free.hcl -var gpus=8 -var free_timeout=5m
#
# Put it first in a serving plan (glm5.hcl, vllm.hcl) as its first steps,
# on the GPU host's target. Without a GPU here, the repository's stand-in
# for nvidia-smi shows it at work:
#
#   PATH=$PWD/steps/testdata/nvidia-smi:$PATH NVIDIA_SMI_FIXTURE=h100-idle \
#     lockstep run examples/gpu/gpu-free.hcl

plan "gpu-free" {
  description = "Check that the GPUs are present and free before a launch"
}

variable "gpus" {
  type        = number
  default     = 1
  description = "how many GPUs the launch needs"
  validation {
    condition     = var.gpus >= 1 && floor(var.gpus) == var.gpus
    error_message = "gpus is a whole number, at least 1."
  }
}

variable "max_used_mib" {
  type        = number
  default     = 1024
  description = "memory a GPU may have in use and still count as free (the driver and a display hold a little)"
}

variable "free_timeout" {
  type        = string
  default     = "2m"
  description = "how long to wait for the GPUs to be released (a server that was just stopped frees its memory within seconds)"
}

step "assert" "driver" {
  description = "The driver answers and sees enough GPUs; a missing driver fails here at once"

  probe "gpu" "gpus" {}

  postcondition {
    condition     = probe.gpus.count >= var.gpus
    error_message = "the host has ${probe.gpus.count} GPUs; the launch needs ${var.gpus}"
  }
}

step "wait" "free" {
  description = "No process holds GPU memory, and no GPU has more than max_used_mib in use"
  timeout     = var.free_timeout
  interval    = "2s"

  probe "gpu" "gpus" {}

  postcondition {
    condition = length(probe.gpus.processes) == 0
    error_message = "GPU memory is held by ${join(", ", [
      for p in probe.gpus.processes :
      "pid ${p.pid} (${p.name == null ? "unknown" : p.name}) ${p.used_memory_mib == null ? "?" : p.used_memory_mib} MiB on GPU ${p.gpu_index == null ? "?" : p.gpu_index}"
    ])}"
  }
  postcondition {
    condition = length([for g in probe.gpus.gpus : g if g.memory_used_mib > var.max_used_mib]) == 0
    error_message = "GPU memory in use above ${var.max_used_mib} MiB: ${join(", ", [
      for g in probe.gpus.gpus : "GPU ${g.index} ${g.memory_used_mib} MiB" if g.memory_used_mib > var.max_used_mib
    ])}"
  }
}
