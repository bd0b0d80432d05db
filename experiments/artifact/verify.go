package artifact

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fgn-paper/fgn/fgn/backend"
)

// Status of a verified claim. Inconclusive is the verdict of a timing claim whose measurements
// cannot resolve it (see Measure.Repeated); it is not a failure.
const (
	Pass         = "pass"
	Fail         = "fail"
	Inconclusive = "inconclusive"
	NotRun       = "not run"
)

// ConfigError is an error of the configuration, found before any claim runs: the manifest
// cannot be read or is invalid, the profile is unknown, the backend cannot be created, or a
// program a claim runs is missing. Commands report it as a usage error (exit status 2), not as
// failed claims.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// Result is the outcome of one claim.
type Result struct {
	ID        string  `json:"id"`
	Reference string  `json:"reference"`
	Expected  string  `json:"expected"`
	Measured  string  `json:"measured"`
	Status    string  `json:"status"`
	Seconds   float64 `json:"seconds"`
	Detail    string  `json:"detail,omitempty"`
}

// ExecFunc runs argv (program first) in dir, copying its combined output to log, and returns
// that output. A non-zero exit is returned as an error along with the output.
type ExecFunc func(ctx context.Context, dir string, argv []string, log io.Writer) ([]byte, error)

// Options configure [Verify].
type Options struct {
	// Profile replaces "{profile}" in the claims' commands; it must be one of the manifest's
	// profiles.
	Profile string
	// Out is the directory the commands write their outputs to; it replaces "{out}".
	Out string
	// Dir is the directory commands run in and data paths are relative to (the repository root).
	Dir string
	// Subcommands are the known fgn subcommands; FGN is the fgn executable that runs them.
	Subcommands []string
	FGN         string
	// Exec runs the commands (default: os/exec, after checking that the programs the claims of
	// the profile run exist); Log receives their output and the progress.
	Exec ExecFunc
	Log  io.Writer
}

// Verify runs every claim of a in order and returns their results. Claims needing a data set
// that is absent (or that is not the data set its identity names) are not run. A command shared
// by several claims runs once. Before any claim runs it checks the configuration: the profile,
// the backend GOMLX_BACKEND selects (the commands inherit it) and, with the default Exec, the
// programs the claims run; a problem there is returned as a *[ConfigError] and no claim runs.
// Otherwise the error is nil and failing claims are reported in the results.
func Verify(ctx context.Context, a *Artifact, opt Options) ([]Result, error) {
	if err := preflight(a, &opt); err != nil {
		return nil, &ConfigError{err}
	}
	type run struct {
		out     []byte
		err     error
		claimID string
	}
	runs := map[string]*run{}
	var results []Result
	for i, c := range a.Claims {
		res := Result{ID: c.ID, Reference: c.Reference, Expected: c.Expected}
		order, _ := parseOrdering(c.Expected)
		switch {
		case c.Output == GoTest:
			res.Expected = "the tests pass"
		case c.Expected == NotReached:
			res.Expected = NotReached
		case c.Measure.Repeated && order != nil:
			res.Expected = fmt.Sprintf("%s (%g%% bootstrap interval of each median ratio below 1)", c.Expected, 100*bootstrapConfidence)
		case c.Measure.Repeated:
			res.Expected = fmt.Sprintf("median %s (%s; %g%% bootstrap interval inside)", c.Expected, fmtTol(c.Tolerance), 100*bootstrapConfidence)
		default:
			res.Expected = fmt.Sprintf("%s (%s)", c.Expected, fmtTol(c.Tolerance))
		}
		fmt.Fprintf(opt.Log, "[%d/%d] %s: %s\n", i+1, len(a.Claims), c.ID, c.Reference)
		if len(c.Profiles) > 0 && !slices.Contains(c.Profiles, opt.Profile) {
			res.Status = NotRun
			res.Detail = fmt.Sprintf("checked only in profile %s", strings.Join(c.Profiles, ", "))
			results = append(results, res)
			fmt.Fprintf(opt.Log, "  not run: %s\n", res.Detail)
			continue
		}
		if missing := missingData(a, c, opt.Dir); missing != "" {
			res.Status, res.Detail = NotRun, missing
			results = append(results, res)
			fmt.Fprintf(opt.Log, "  not run: %s\n", missing)
			continue
		}
		cmd, err := ParseCommand(c.Command, opt.Subcommands)
		if err != nil {
			res.Status, res.Detail = Fail, err.Error()
			results = append(results, res)
			continue
		}
		argv := append([]string{cmd.Program}, cmd.Args...)
		for k := range argv {
			argv[k] = strings.NewReplacer("{profile}", opt.Profile, "{out}", opt.Out).Replace(argv[k])
		}
		if argv[0] == "fgn" && opt.FGN != "" {
			argv[0] = opt.FGN
		}
		key := strings.Join(argv, "\x00")
		r, ok := runs[key]
		if ok {
			res.Detail = "output of the command run for " + r.claimID + "; "
		} else {
			fmt.Fprintf(opt.Log, "  $ %s\n", strings.Join(argv, " "))
			start := time.Now()
			var out []byte
			if c.Output == GoTest {
				tl := &testLog{w: opt.Log}
				out, err = opt.Exec(ctx, opt.Dir, argv, tl)
				tl.Flush()
			} else {
				out, err = opt.Exec(ctx, opt.Dir, argv, opt.Log)
			}
			res.Seconds = time.Since(start).Seconds()
			r = &run{out: out, err: err, claimID: c.ID}
			runs[key] = r
		}
		switch {
		case c.Output == GoTest:
			res.Measured, res.Status, err = checkGoTest(r.out, r.err)
		case r.err != nil:
			err = fmt.Errorf("command failed: %v", r.err)
		default:
			res.Measured, res.Status, err = checkCSV(filepath.Join(opt.Out, c.Output), c)
		}
		if err != nil {
			res.Status = Fail
			res.Detail += err.Error()
		}
		if res.Status == Inconclusive {
			res.Detail += "the measurements cannot resolve the claim (time more steps or use a quieter machine); not a failure"
		}
		res.Detail = strings.TrimSuffix(res.Detail, "; ")
		fmt.Fprintf(opt.Log, "  %s: measured %s, expected %s\n", res.Status, res.Measured, res.Expected)
		results = append(results, res)
	}
	return results, nil
}

// preflight checks what every claim needs before any runs (see Verify) and fills in opt's
// defaults.
func preflight(a *Artifact, opt *Options) error {
	if _, ok := a.Profiles[opt.Profile]; !ok {
		names := slices.Sorted(maps.Keys(a.Profiles))
		return fmt.Errorf("artifact: unknown profile %q (the manifest has: %s)", opt.Profile, strings.Join(names, ", "))
	}
	be, err := backend.New()
	if err != nil {
		return fmt.Errorf("artifact: the claims' backend cannot be created: %w", err)
	}
	be.Finalize() // the commands create their own; a GPU backend must not hold memory meanwhile
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	if opt.Exec != nil {
		return nil
	}
	opt.Exec = runExec
	for _, c := range a.Claims {
		if len(c.Profiles) > 0 && !slices.Contains(c.Profiles, opt.Profile) {
			continue
		}
		program, _, _ := strings.Cut(strings.TrimSpace(c.Command), " ")
		if program == "fgn" && opt.FGN != "" {
			program = opt.FGN
		}
		if _, err := exec.LookPath(program); err != nil {
			return fmt.Errorf("artifact: claim %s runs %s: %w", c.ID, program, err)
		}
	}
	return nil
}

// missingData returns why a data set c requires cannot be used (absent, or not the data set
// its identity names), or "".
func missingData(a *Artifact, c Claim, dir string) string {
	for _, name := range c.Requires {
		for _, d := range a.Data {
			if d.Name != name {
				continue
			}
			for _, f := range d.Files {
				p := filepath.Join(dir, d.Path, f)
				if _, err := os.Stat(p); err != nil {
					return fmt.Sprintf("needs the %s data set: %s is missing (%s)", name, p, d.Make)
				}
			}
			if d.Identity != nil {
				if err := d.Identity.check(filepath.Join(dir, d.Path)); err != nil {
					return fmt.Sprintf("needs the %s data set: %v", name, err)
				}
			}
		}
	}
	return ""
}

func runExec(ctx context.Context, dir string, argv []string, log io.Writer) ([]byte, error) {
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout = io.MultiWriter(&buf, log)
	cmd.Stderr = cmd.Stdout
	err := cmd.Run()
	return buf.Bytes(), err
}

func fmtTol(t *Tolerance) string {
	var parts []string
	if t.Absolute != nil {
		parts = append(parts, "abs "+strconv.FormatFloat(*t.Absolute, 'g', -1, 64))
	}
	if t.Relative != nil {
		parts = append(parts, "rel "+strconv.FormatFloat(*t.Relative, 'g', -1, 64))
	}
	return strings.Join(parts, " + ")
}
