# want: 8:21 Reference to undeclared local value
# detail: Did you mean "port"?
locals {
  port = 8080
}

step "run" "a" {
  command = "echo ${local.prot}"
}
