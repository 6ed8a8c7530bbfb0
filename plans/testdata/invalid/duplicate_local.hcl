# want: 7:3 Duplicate local "port"
locals {
  port = 8080
}

locals {
  port = 9090
}
