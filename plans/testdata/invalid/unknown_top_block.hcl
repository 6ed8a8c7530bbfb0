# want: 3:1 Unsupported block type
# detail: Did you mean "step"?
stpe "run" "a" {
  command = "true"
}
