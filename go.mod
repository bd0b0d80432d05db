module github.com/fgn-paper/fgn

go 1.26.5

require (
	github.com/gomlx/compute v0.1.3
	github.com/gomlx/go-xla v0.4.1
	github.com/gomlx/gomlx v0.28.3
	github.com/schollz/progressbar/v3 v3.19.0
	gonum.org/v1/gonum v0.16.0
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/gofrs/flock v0.13.0 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/exp v0.0.0-20260410095643-746e56fc9e2f // indirect
	golang.org/x/sys v0.43.0 // indirect
	golang.org/x/term v0.40.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
)
