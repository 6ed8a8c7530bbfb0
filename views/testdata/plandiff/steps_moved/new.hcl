step "run" "c" {
  command = "echo c"
}

step "run" "a" {
  command = "echo a"
}

step "run" "b" {
  command = "echo b"
}

step "run" "new" {
  command = "echo new"
}

step "run" "d" {
  command = "echo D"
}
