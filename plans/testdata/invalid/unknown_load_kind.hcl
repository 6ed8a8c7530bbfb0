# want: 3:8 Unknown load kind
step "benchmark" "rps" {
  load "grpc" {
    url = "127.0.0.1:50051"
  }
}
