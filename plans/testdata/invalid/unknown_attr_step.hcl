# want: 4:1 Missing command
# want: 5:3 Unsupported argument
# detail: Did you mean "command"?
step "run" "build" {
  comand = "make"
}
