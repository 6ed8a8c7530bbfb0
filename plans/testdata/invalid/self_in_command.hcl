# want: 3:21 Invalid reference
step "run" "a" {
  command = "echo ${self.exit_code}"
}
