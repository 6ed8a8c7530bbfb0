# want: 4:13 Invalid default value for variable
variable "tp" {
  type    = number
  default = "eight"
}
