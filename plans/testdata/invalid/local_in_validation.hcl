# want: 9:26 Invalid reference in validation
locals {
  allowed = ["a", "b"]
}

variable "backend" {
  default = "a"
  validation {
    condition = contains(local.allowed, var.backend)
  }
}
