# warn: 8:30 Unquoted value in a command
# detail: Write ${shellquote(var.model)}.
variable "model" {
  default = "my model"
}

step "run" "a" {
  command = "serve --model ${var.model}"
}
