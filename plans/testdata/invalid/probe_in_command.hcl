# want: 3:21 Invalid reference
step "run" "a" {
  command = "echo ${probe.x.stdout}"
  probe "exec" "x" {
    command = "date"
  }
}
