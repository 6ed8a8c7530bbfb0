# want: 3:21 Unknown variable
step "run" "a" {
  command = "echo ${env.HOME}"
}
