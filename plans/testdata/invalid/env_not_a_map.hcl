# want: 4:13 Incorrect attribute value type
step "run" "a" {
  command = "env"
  env     = ["A=1"]
}
