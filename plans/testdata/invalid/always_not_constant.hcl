# want: 9:13 Constant required
variable "cleanup" {
  type    = bool
  default = true
}

step "run" "cleanup" {
  command = "rm -rf /tmp/work"
  always  = var.cleanup
}
