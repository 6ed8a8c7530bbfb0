# want: 3:10 Invalid type specification
variable "tp" {
  type = integer
}
