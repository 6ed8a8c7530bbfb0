# want: 4:13 Invalid duration
step "launch" "server" {
  command = "./server"
  grace   = "two seconds"
}
