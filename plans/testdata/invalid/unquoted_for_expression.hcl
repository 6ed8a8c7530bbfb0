# warn: 9:22 Unquoted value in a command
# detail: Write ${shellquote(join(" ", [for f in var.flags : f]))}
variable "flags" {
  type    = list(string)
  default = ["--a b"]
}

step "run" "a" {
  command = "serve ${join(" ", [for f in var.flags : f])}"
}
