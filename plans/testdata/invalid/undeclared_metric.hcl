# want: 9:17 Reference to undeclared metric
# detail: Did you mean "rps"?
step "benchmark" "b" {
  command = "./bench"
  metric "rps" {
    regex = "rps: ([0-9.]+)"
  }
  postcondition {
    condition = self.metrics.rqs >= 100
  }
}
