# want: 5:32 Invalid reference
variable "backend" {
  default = "a"
  validation {
    condition = var.backend != step.run.a.stdout
  }
}
