# want: 5:3 Unsupported argument
# detail: Did you mean "default"?
variable "x" {
  type    = string
  defualt = "a"
}
