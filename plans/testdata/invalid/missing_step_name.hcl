# want: 2:12 Missing name for step
step "run" {
  command = "true"
}
