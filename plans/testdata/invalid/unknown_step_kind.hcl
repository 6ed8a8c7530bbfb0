# want: 3:6 Unknown step kind
# detail: Did you mean "launch"?
step "lauch" "server" {
  command = "./server"
}
