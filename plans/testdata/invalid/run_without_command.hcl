# want: 2:1 Missing command
step "run" "build" {
  description = "build it"
}
