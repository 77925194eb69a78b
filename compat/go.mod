module github.com/sluicehq/sluice/compat

go 1.26.0

require (
	github.com/dunglas/httpsfv v1.1.2
	github.com/go-chi/httprate v0.16.1
	github.com/sluicehq/sluice v0.0.0
)

require (
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/zeebo/xxh3 v1.0.2 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/sluicehq/sluice => ../
