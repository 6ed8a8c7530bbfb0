# want: 8:32 Reference to undeclared input variable
# detail: Did you mean "backend"?
variable "backend" {
  default = "a"
}

step "run" "a" {
  command = "echo ${shellquote(var.bakend)}"
}
