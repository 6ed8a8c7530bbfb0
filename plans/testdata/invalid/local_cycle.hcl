# want: 4:3 Cycle in locals
# want: 5:3 Cycle in locals
locals {
  a = local.b
  b = local.a
}
