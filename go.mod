module lockstep

go 1.26.0

require github.com/zclconf/go-cty v1.20.0

require (
	github.com/apparentlymart/go-textseg/v15 v15.0.0 // indirect
	github.com/apparentlymart/go-textseg/v17 v17.0.1 // indirect
	golang.org/x/text v0.11.0 // indirect
)
