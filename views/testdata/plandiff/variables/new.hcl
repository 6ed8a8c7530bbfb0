variable "backend" {
  type        = string
  default     = "triton"
  description = "the MoE backend under trial"
  validation {
    condition     = contains(["cutlass", "triton", "trtllm"], var.backend)
    error_message = "backend must be cutlass, triton or trtllm."
  }
}

variable "token" {
  type      = string
  sensitive = true
  default   = "correct-horse"
}

variable "port" {
  type    = string
  default = "8000"
}

variable "model" {
  type    = string
  default = "glm-5"
}

variable "tp" {
  type    = number
  default = 8
  validation {
    condition     = var.tp > 0
    error_message = "tp must be positive."
  }
}

step "run" "serve" {
  command = "serve --backend ${shellquote(var.backend)} --port ${var.port} --model ${shellquote(var.model)} --token ${shellquote(var.token)} --tp ${var.tp}"
}
