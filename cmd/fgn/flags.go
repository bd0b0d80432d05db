package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gomlx/compute"

	"github.com/fgn-paper/fgn/experiments/method"
	"github.com/fgn-paper/fgn/experiments/profile"
	"github.com/fgn-paper/fgn/fgn"
	"github.com/fgn-paper/fgn/fgn/backend"
	"github.com/fgn-paper/fgn/internal/cli"
)

// Flag values that check their range when they are set, so that an invalid value is a usage
// error naming the flag ("invalid value "0" for flag -damping: want a finite value > 0"), and
// whose --help default is the value actually used.

// floatValue is a float64 flag that must be finite and > 0.
type floatValue struct{ p *float64 }

func (v floatValue) String() string {
	if v.p == nil {
		return ""
	}
	return formatFloat(*v.p)
}

func (v floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return fmt.Errorf("not a number")
	case math.IsNaN(f) || math.IsInf(f, 0):
		return fmt.Errorf("want a finite value")
	case f <= 0:
		return fmt.Errorf("want a finite value > 0")
	}
	*v.p = f
	return nil
}

// positiveFloat defines a float flag that must be finite and > 0.
func (c *command) positiveFloat(name string, value float64, usage string) *float64 {
	p := &value
	c.Var(floatValue{p: p}, name, usage+"; a `number` > 0")
	return p
}

// intValue is an int flag with a lower bound.
type intValue struct {
	p   *int
	min int
}

func (v intValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.Itoa(*v.p)
}

func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return fmt.Errorf("not an integer")
	case n < v.min:
		return fmt.Errorf("want an integer ≥ %d", v.min)
	}
	*v.p = n
	return nil
}

// intAtLeast defines an int flag that must be ≥ min.
func (c *command) intAtLeast(name string, value, min int, usage string) *int {
	p := &value
	c.Var(intValue{p: p, min: min}, name, fmt.Sprintf("%s; an `integer` ≥ %d", usage, min))
	return p
}

// optional is a flag whose default depends on other settings: unset, --help shows the
// description of its default; set, it holds a checked value.
type optional[T any] struct {
	value  T
	given  bool
	def    string
	parse  func(string) (T, error)
	format func(T) string
}

func (o *optional[T]) String() string {
	switch {
	case o == nil:
		return ""
	case !o.given:
		return o.def
	}
	return o.format(o.value)
}

func (o *optional[T]) Set(s string) error {
	v, err := o.parse(s)
	if err != nil {
		return err
	}
	o.value, o.given = v, true
	return nil
}

// get returns the value and whether it was given.
func (o *optional[T]) get() (T, bool) { return o.value, o.given }

// optionalInt defines an int flag (≥ min) whose default is described by def.
func (c *command) optionalInt(name, def string, min int, usage string) *optional[int] {
	o := &optional[int]{def: def, format: strconv.Itoa, parse: func(s string) (int, error) {
		var n int
		err := intValue{p: &n, min: min}.Set(s)
		return n, err
	}}
	c.Var(o, name, fmt.Sprintf("%s; an `integer` ≥ %d", usage, min))
	return o
}

// optionalPositiveFloat defines a float flag (finite and > 0) whose default is described by def.
func (c *command) optionalPositiveFloat(name, def, usage string) *optional[float64] {
	o := &optional[float64]{def: def, format: formatFloat, parse: func(s string) (float64, error) {
		var f float64
		err := floatValue{p: &f}.Set(s)
		return f, err
	}}
	c.Var(o, name, usage+"; a `number` > 0")
	return o
}

// notApplicable returns a usage error naming the first of the flags given on the command line,
// which do not apply for the reason given ("the data come from --data"), or nil when none is.
func (c *command) notApplicable(reason string, names ...string) error {
	for _, name := range names {
		if c.set(name) {
			return cli.Usagef("%s: --%s does not apply: %s", strings.TrimPrefix(c.Name(), "fgn "), name, reason)
		}
	}
	return nil
}

// checkOutDir returns a usage error when the output directory dir, given by --flag, cannot be
// one: it, or the nearest of its parents that exists, is not a directory. Commands call it before
// any work, so that a bad --out fails at once rather than after a run.
func checkOutDir(flag, dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		switch {
		case err == nil && st.IsDir():
			return nil
		case err == nil:
			if p == filepath.Clean(dir) {
				return cli.Usagef("--%s %s: a file is there, not a directory", flag, dir)
			}
			return cli.Usagef("--%s %s: %s is a file, not a directory", flag, dir, p)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR): // ENOTDIR: a parent is a file
			return cli.Usagef("--%s %s: %v", flag, dir, err)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// settingValue is a flag for one field of SGN's and FGN's fgn.Settings. A value is accepted when
// Validate accepts the paper's settings (method.Paper) with that field set to it, so the command
// line takes exactly the values the experiments take, and its error names the setting's range.
type settingValue[T any] struct {
	parse func(string) (T, error)
	set   func(*fgn.Settings, T)
}

func (v settingValue[T]) check(s string) (T, error) {
	x, err := v.parse(s)
	if err != nil {
		return x, err
	}
	settings := method.Paper(method.FGN).GN
	v.set(&settings, x)
	return x, settings.Validate()
}

// setting defines a flag for one field of fgn.Settings whose default is value.
func setting[T any](c *command, name string, value T, format func(T) string, v settingValue[T], usage string) *T {
	o := &optional[T]{value: value, given: true, format: format, parse: v.check}
	c.Var(o, name, usage)
	return &o.value
}

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("not a number")
	}
	return f, nil
}

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not an integer")
	}
	return n, nil
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// profileFlag defines --profile, a name of package profile's table.
func (c *command) profileFlag() *string {
	return c.String("profile", "quick", "profile: "+profile.Usage)
}

// backendFlag defines --backend.
func (c *command) backendFlag() *string {
	return c.String("backend", "", "backend, as GOMLX_BACKEND: go, xla:cpu, xla:cuda or xla:/abs/path/plugin.so (default: $GOMLX_BACKEND, else go)")
}

// newBackend returns the backend named by --backend, or by GOMLX_BACKEND when the flag is
// empty; an unusable one is a configError that names where the setting came from.
func newBackend(flagValue string) (compute.Backend, error) {
	if flagValue != "" {
		be, err := backend.NewWithConfig(flagValue)
		if err != nil {
			return nil, cli.ConfigError{Err: fmt.Errorf("--backend %s: %w", flagValue, err)}
		}
		return be, nil
	}
	be, err := backend.New()
	if err != nil {
		return nil, cli.ConfigError{Err: err}
	}
	return be, nil
}

// parseMethods parses a comma-separated list of methods, each at most once.
func parseMethods(list string) ([]method.Method, error) {
	var ms []method.Method
	for _, name := range strings.Split(list, ",") {
		m, err := method.ParseMethod(strings.TrimSpace(name))
		if err != nil {
			return nil, cli.Usagef("--method: %v", err)
		}
		for _, prev := range ms {
			if prev == m {
				return nil, cli.Usagef("--method: %s is listed twice", m)
			}
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// dampingValue is a damping policy flag, by the policies' String names: "constant" or "lm".
type dampingValue struct{ p *fgn.DampingPolicy }

func (v dampingValue) String() string {
	if v.p == nil {
		return ""
	}
	return (*v.p).String()
}

func (v dampingValue) Set(s string) error {
	for _, p := range []fgn.DampingPolicy{fgn.ConstantDamping{}, fgn.LevenbergMarquardt()} {
		if p.String() == s {
			*v.p = p
			return nil
		}
	}
	return fmt.Errorf("unknown damping policy %q (want %q or %q)", s, fgn.ConstantDamping{}, fgn.LevenbergMarquardt())
}

// dampingPolicy defines a damping policy flag whose default is fgn.ConstantDamping.
func (c *command) dampingPolicy(name, usage string) *fgn.DampingPolicy {
	p := new(fgn.DampingPolicy)
	*p = fgn.ConstantDamping{}
	c.Var(dampingValue{p: p}, name, usage+"; a `policy`: constant or lm")
	return p
}
