plan "bring-up" {
  description = "Bring up the server and check it answers"
}

step "run" "hello" {
  command = "echo hello"
}
