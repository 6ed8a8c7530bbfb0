# want: 5:3 Unsupported argument
# detail: log belongs to launch steps
step "run" "build" {
  command = "make"
  log     = "/tmp/build.log"
}
