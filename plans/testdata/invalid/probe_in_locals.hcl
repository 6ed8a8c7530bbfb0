# want: 3:12 Invalid reference
locals {
  status = probe.health.status
}
