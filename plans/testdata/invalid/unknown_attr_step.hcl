# want: 4:3 Unsupported argument
# detail: Did you mean "command"?
step "run" "build" {
  comand = "make"
}
