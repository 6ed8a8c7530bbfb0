module lockstep

go 1.26.0

require github.com/joshdk/go-junit v1.0.0
