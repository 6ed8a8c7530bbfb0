plan "bringup" {
  description = "Bring up the server"
}

step "run" "hello" {
  command = "echo hello"
}
