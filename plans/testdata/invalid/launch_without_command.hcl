# want: 2:1 Missing command
step "launch" "server" {
  log = "/tmp/server.log"
}
