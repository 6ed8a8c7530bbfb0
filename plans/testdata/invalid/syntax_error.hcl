# want: 5:21 Invalid multi-line string
# want: 5:21 Unterminated template string
# want: 6:2 Invalid multi-line string
step "run" "a" {
  command = "echo hi
}
