# want: 7:17 Constant required
variable "who" {
  default = "me"
}

step "run" "a" {
  description = "run by ${var.who}"
  command     = "true"
}
