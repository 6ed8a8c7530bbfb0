# want: 2:12 Invalid step name
step "run" "build-1.0" {
  command = "make"
}
