step "run" "a" {
  command = "echo a"
}

step "run" "b" {
  command = "echo b"
}

step "run" "c" {
  command = "echo c"
}

step "run" "d" {
  command = "echo d"
}
