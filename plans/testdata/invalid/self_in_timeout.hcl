# want: 4:16 Invalid reference
step "run" "a" {
  command = "date"
  timeout = "${self.duration_ms}ms"
}
