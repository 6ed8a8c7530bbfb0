# want: 5:33 Invalid regular expression
step "run" "version" {
  command = "./server --version"
  postcondition {
    condition = length(regexall("v(\\d+", self.stdout)) > 0
  }
}
