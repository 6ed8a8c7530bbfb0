variable "backend" {
  type    = string
  default = "cutlass"
  validation {
    condition     = contains(["cutlass", "triton"], var.backend)
    error_message = "backend must be cutlass or triton."
  }
}

variable "token" {
  type      = string
  sensitive = true
  default   = "hunter2"
}

variable "port" {
  type    = number
  default = 8000
}

variable "model" {
  type = string
}

variable "retired" {
  default = "x"
}

step "run" "serve" {
  command = "serve --backend ${shellquote(var.backend)} --port ${var.port} --model ${shellquote(var.model)} --token ${shellquote(var.token)}"
}
