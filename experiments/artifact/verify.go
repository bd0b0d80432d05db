package artifact

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fgn-paper/fgn/experiments/report"
)

// Status of a verified claim.
const (
	Pass   = "pass"
	Fail   = "fail"
	NotRun = "not run"
)

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
	// Exec runs the commands (default: os/exec); Log receives their output and the progress.
	Exec ExecFunc
	Log  io.Writer
}

// Verify runs every claim of a in order and returns their results. Claims needing a data set
// that is absent are not run. A command shared by several claims runs once. The error is
// non-nil only for bad options; failing claims are reported in the results.
func Verify(ctx context.Context, a *Artifact, opt Options) ([]Result, error) {
	if _, ok := a.Profiles[opt.Profile]; !ok {
		var names []string
		for name := range a.Profiles {
			names = append(names, name)
		}
		return nil, fmt.Errorf("artifact: unknown profile %q (the manifest has: %s)", opt.Profile, strings.Join(names, ", "))
	}
	if opt.Exec == nil {
		opt.Exec = runExec
	}
	if opt.Log == nil {
		opt.Log = io.Discard
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
		switch {
		case c.Output == TestLog:
			res.Expected = fmt.Sprintf("every printed error ≤ %s", fmtTol(c.Tolerance))
		case c.Expected == NotReached:
			res.Expected = NotReached
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
			out, err := opt.Exec(ctx, opt.Dir, argv, opt.Log)
			res.Seconds = time.Since(start).Seconds()
			r = &run{out: out, err: err, claimID: c.ID}
			runs[key] = r
		}
		switch {
		case c.Output == TestLog:
			res.Measured, res.Status, err = checkTestLog(r.out, r.err, c.Tolerance)
		case r.err != nil:
			err = fmt.Errorf("command failed: %v", r.err)
		default:
			res.Measured, res.Status, err = checkCSV(filepath.Join(opt.Out, c.Output), c)
		}
		if err != nil {
			res.Status = Fail
			res.Detail += err.Error()
		}
		res.Detail = strings.TrimSuffix(res.Detail, "; ")
		fmt.Fprintf(opt.Log, "  %s: measured %s, expected %s\n", res.Status, res.Measured, res.Expected)
		results = append(results, res)
	}
	return results, nil
}

// missingData returns a description of the first absent data set c requires, or "".
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

// testError matches the lines the project's test helper prints:
// "<what>: error E (tolerance T)" and "<what>: error E exceeds tolerance T".
var testError = regexp.MustCompile(`error (\S+) (?:\(tolerance|exceeds tolerance) `)

// checkTestLog reads a verbose go test log: the claim passes when the test passed and printed at
// least one error, all within tol.
func checkTestLog(out []byte, runErr error, tol *Tolerance) (measured, status string, err error) {
	worst, n := 0.0, 0
	for _, m := range testError.FindAllSubmatch(out, -1) {
		e, perr := strconv.ParseFloat(string(m[1]), 64)
		if perr != nil {
			return "", Fail, fmt.Errorf("unreadable error value %q in the test log", m[1])
		}
		n++
		if math.IsNaN(e) || e > worst {
			worst = e
		}
	}
	if bytes.Contains(out, []byte("no tests to run")) || (n == 0 && runErr == nil) {
		return "", Fail, fmt.Errorf("the test printed no \"error E (tolerance T)\" line (does -run match a test?)")
	}
	measured = fmt.Sprintf("max error %.3g over %d checks", worst, n)
	if runErr != nil {
		return measured, Fail, fmt.Errorf("go test failed: %v", runErr)
	}
	if !(worst <= tol.slack(0)) {
		return measured, Fail, nil
	}
	return measured, Pass, nil
}

// checkCSV compares the values Measure selects from the CSV file at path with the claim's
// expected value or ordering.
func checkCSV(path string, c Claim) (measured, status string, err error) {
	t, err := report.Read(path)
	if err != nil {
		return "", Fail, err
	}
	rows, err := selectRows(t, c.Measure.Where)
	if err != nil {
		return "", Fail, err
	}
	if len(rows) == 0 {
		return "", Fail, fmt.Errorf("%s: no row matches %v", path, c.Measure.Where)
	}
	vals := make([]float64, len(rows))
	for i, r := range rows {
		if vals[i], err = cell(t, r, c.Measure.Column); err != nil {
			return "", Fail, err
		}
		if c.Measure.Minus != "" {
			m, err := cell(t, r, c.Measure.Minus)
			if err != nil {
				return "", Fail, err
			}
			vals[i] -= m
		}
	}
	if c.Expected == NotReached {
		return checkNotReached(vals)
	}
	order, _ := parseOrdering(c.Expected)
	if order != nil {
		return checkOrdering(t, rows, vals, order, c)
	}
	want, _ := strconv.ParseFloat(c.Expected, 64)
	worst := vals[0]
	for _, v := range vals {
		if math.IsNaN(v) || abs(v-want) > abs(worst-want) {
			worst = v
		}
	}
	measured = strconv.FormatFloat(worst, 'g', 6, 64)
	if len(vals) > 1 {
		measured = fmt.Sprintf("%s (farthest of %d rows)", measured, len(vals))
	}
	if !(abs(worst-want) <= c.Tolerance.slack(want)) {
		return measured, Fail, nil
	}
	return measured, Pass, nil
}

// checkNotReached passes when every value is NaN (not reached); otherwise it reports the
// smallest value reached.
func checkNotReached(vals []float64) (measured, status string, err error) {
	reached := math.Inf(1)
	for _, v := range vals {
		if !math.IsNaN(v) {
			reached = math.Min(reached, v)
		}
	}
	if math.IsInf(reached, 1) {
		return NotReached, Pass, nil
	}
	return "reached at " + strconv.FormatFloat(reached, 'g', 6, 64), Fail, nil
}

func checkOrdering(t *report.Table, rows [][]string, vals []float64, order []string, c Claim) (string, string, error) {
	g, err := t.Column(c.Measure.Group)
	if err != nil {
		return "", Fail, err
	}
	byGroup := map[string]float64{}
	for i, r := range rows {
		if _, dup := byGroup[r[g]]; dup {
			return "", Fail, fmt.Errorf("%s %q has several selected rows: narrow measure.where", c.Measure.Group, r[g])
		}
		byGroup[r[g]] = vals[i]
	}
	parts := make([]string, len(order))
	for i, name := range order {
		v, ok := byGroup[name]
		if !ok {
			return "", Fail, fmt.Errorf("no selected row has %s = %q", c.Measure.Group, name)
		}
		parts[i] = fmt.Sprintf("%s=%.4g", name, v)
	}
	measured := strings.Join(parts, ", ")
	for i := 0; i+1 < len(order); i++ {
		lo, hi := byGroup[order[i]], byGroup[order[i+1]]
		if !(lo < hi+c.Tolerance.slack(hi)) {
			return measured, Fail, nil
		}
	}
	return measured, Pass, nil
}

// selectRows keeps the rows matching every condition of where: equalities first (numbers
// compared as numbers), then "max"/"min" (the rows holding the column's largest/smallest number
// among those kept), in column-name order.
func selectRows(t *report.Table, where map[string]string) ([][]string, error) {
	cols := slices.Sorted(maps.Keys(where))
	slices.SortStableFunc(cols, func(a, b string) int {
		return cmp.Compare(isExtreme(where[a]), isExtreme(where[b]))
	})
	rows := t.Rows
	for _, col := range cols {
		want := where[col]
		c, err := t.Column(col)
		if err != nil {
			return nil, err
		}
		if isExtreme(want) == 1 {
			best := math.Inf(1)
			if want == "max" {
				best = math.Inf(-1)
			}
			for _, r := range rows {
				v, err := strconv.ParseFloat(r[c], 64)
				if err != nil {
					return nil, fmt.Errorf("column %q: %w", col, err)
				}
				if (want == "max" && v > best) || (want == "min" && v < best) {
					best = v
				}
			}
			want = strconv.FormatFloat(best, 'g', -1, 64)
		}
		var kept [][]string
		for _, r := range rows {
			if sameCell(r[c], want) {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	return rows, nil
}

func isExtreme(v string) int {
	if v == "max" || v == "min" {
		return 1
	}
	return 0
}

// sameCell compares two cells as numbers when both are numbers, else as strings.
func sameCell(a, b string) bool {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		return x == y
	}
	return a == b
}

func cell(t *report.Table, row []string, col string) (float64, error) {
	c, err := t.Column(col)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(row[c], 64)
	if err != nil {
		return 0, fmt.Errorf("column %q: %w", col, err)
	}
	return v, nil
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
