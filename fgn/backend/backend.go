// Package backend selects the GoMLX compute backend for fgn programs.
//
// The selection honours GOMLX_BACKEND like GoMLX itself, with one difference: when it is unset
// the pure-Go backend is used, never XLA. (GoMLX's own default is "xla", which tries to
// download a PJRT plugin and fails offline.) Accepted values:
//
//	go                          the pure-Go backend (the default)
//	xla:cuda, xla:cpu           an installed PJRT plugin, found by name in PJRT_PLUGIN_LIBRARY_PATH
//	                            or the standard plugin directories
//	xla:/abs/path/plugin.so     a PJRT plugin file, for example the xla_cuda_plugin.so shipped by
//	                            the jax-cuda13-pjrt Python wheel (jax_plugins/xla_cuda13/)
//	/abs/path/plugin.so         shorthand for the previous form
//
// The pure-Go backend runs with one graph executor (its option num_executors=1; an explicit
// "go:num_executors=N" overrides it): the operations of a graph run one at a time, each
// spread over the backend's worker pool. With several executors (the backend's default), a
// large matrix product in a While loop body waits forever for a worker (see compat.go:
// compatParallelExecutorDeadlock in package fgn).
//
// XLA options may follow the plugin after commas (e.g. "xla:cuda,preallocate=false"). PJRT
// plugins are never downloaded: a plugin that is not installed is an error that says what to
// install or where to point GOMLX_BACKEND.
//
// For CUDA plugins from a Python wheel, XLA also needs the CUDA libraries' directory:
// set XLA_FLAGS=--xla_gpu_cuda_data_dir=<site-packages>/nvidia.
//
// It lives under fgn/ rather than with the command-line tools because a library user needs the
// same choice: the fgn package itself never selects a backend (its graphs run on whatever
// backend the caller's Exec uses), and GoMLX's default selection tries a plugin download that
// fails offline. Library users, the experiments, data/fetch, the notebooks and
// the fgn command all select through this one package, and only package fgn imports nothing
// of the project.
package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/go-xla/compute/xla"
)

// EnvVar is the environment variable that selects the backend.
const EnvVar = compute.ConfigEnvVar

// goDefaults precede the pure-Go backend's options, which are applied in order, so that the
// user's own options override them (see the package documentation).
const goDefaults = "num_executors=1,"

// New returns the backend selected by GOMLX_BACKEND (see the package documentation), the
// pure-Go backend when it is unset or empty. Its errors name the variable.
func New() (compute.Backend, error) {
	config := os.Getenv(EnvVar)
	b, err := NewWithConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", EnvVar, config, err)
	}
	return b, nil
}

// MustNew is New for tests and examples: it panics when the backend cannot be created.
func MustNew() compute.Backend {
	b, err := New()
	if err != nil {
		panic(err)
	}
	return b
}

// NewWithConfig returns the backend for a configuration string in the GOMLX_BACKEND format;
// its errors describe the configuration, not where it came from.
func NewWithConfig(config string) (b compute.Backend, err error) {
	config = strings.TrimSpace(config)
	if filepath.IsAbs(config) {
		config = xla.BackendName + ":" + config
	}
	name, options, _ := strings.Cut(config, ":")
	switch name {
	case "", gobackend.BackendName:
		return gobackend.New(goDefaults + options)
	case xla.BackendName:
		return newXLA(options)
	default:
		return nil, fmt.Errorf("unknown backend %q: use \"go\", \"xla:cuda\", \"xla:cpu\" or "+
			"\"xla:/absolute/path/to/pjrt_plugin.so\"", name)
	}
}

func newXLA(options string) (b compute.Backend, err error) {
	xla.EnableAutoInstall(false)
	plugin, _, _ := strings.Cut(options, ",")
	if plugin == "" {
		return nil, fmt.Errorf("backend xla needs a PJRT plugin: \"xla:cuda\", \"xla:cpu\" or " +
			"\"xla:/absolute/path/to/pjrt_plugin.so\"")
	}
	if filepath.IsAbs(plugin) {
		if _, statErr := os.Stat(plugin); statErr != nil {
			return nil, fmt.Errorf("PJRT plugin file %s cannot be used: %w", plugin, statErr)
		}
	}
	defer func() {
		// go-xla panics on some plugin-loading failures; report them as errors.
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("loading PJRT plugin %q failed: %v", plugin, r)
		}
	}()
	b, err = xla.New(options)
	if err != nil {
		if filepath.IsAbs(plugin) {
			return nil, fmt.Errorf("loading PJRT plugin %s failed (is it a PJRT plugin for this "+
				"machine, and are its CUDA libraries found, e.g. via XLA_FLAGS=--xla_gpu_cuda_data_dir?): %w", plugin, err)
		}
		return nil, fmt.Errorf("PJRT plugin %q is not installed (found: %q) and fgn never downloads "+
			"plugins: install it, set PJRT_PLUGIN_LIBRARY_PATH to its directory, or select "+
			"xla:/absolute/path/to/its.so: %w", plugin, xla.GetAvailablePlugins(), err)
	}
	return b, nil
}

// Describe returns a one-line description of the backend, for logs and CSV headers.
//
// The pure-Go backend describes itself by the size of its worker pool, "parallelism=N", which
// compute sets to 2·GOMAXPROCS (more tasks than CPU threads, since a task may wait): on 2 CPUs
// it reads "parallelism=4". Describe states the CPU threads instead, "GOMAXPROCS 2, worker pool
// of 4 tasks".
func Describe(b compute.Backend) string {
	d := b.Description()
	if m := goParallelism.FindStringSubmatch(d); m != nil && b.String() == gobackend.BackendName {
		d = strings.Replace(d, m[0], fmt.Sprintf("(GOMAXPROCS %d, worker pool of %s tasks)", runtime.GOMAXPROCS(0), m[1]), 1)
	}
	return fmt.Sprintf("%s (%s)", b.Name(), d)
}

// goParallelism matches the pure-Go backend's worker-pool size in its description.
var goParallelism = regexp.MustCompile(`\(parallelism=(-?[0-9]+)\)`)

// SIMDWarning returns a one-line warning for long runs on the pure-Go backend of a binary built
// without GOEXPERIMENT=simd (its matrix products then run without the AVX2/AVX-512 kernels),
// or "" when there is nothing to warn about.
func SIMDWarning(b compute.Backend) string {
	if SIMDBuild || b.String() != gobackend.BackendName {
		return ""
	}
	return "warning: built without GOEXPERIMENT=simd: the pure-Go backend's matrix products run without their AVX2/AVX-512 kernels, several times slower; " +
		"rebuild with GOEXPERIMENT=simd for timings"
}
