module lockstep

go 1.26.0
