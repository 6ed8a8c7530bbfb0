# want: 7:6 Duplicate step "run.build"
# detail: already declared at line 3, column 1
step "run" "build" {
  command = "make"
}

step "run" "build" {
  command = "make test"
}
