# want: 7:10 Duplicate variable "backend"
# detail: already declared at line 3, column 1
variable "backend" {
  default = "a"
}

variable "backend" {
  default = "b"
}
