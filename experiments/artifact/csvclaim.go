// The claims read from a CSV file: a value, an ordering or "not reached", selected by a
// claim's Measure.

package artifact

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fgn-paper/fgn/experiments/report"
)

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
	want, _ := strconv.ParseFloat(c.Expected, 64)
	switch {
	case c.Measure.Repeated && order != nil:
		groups, err := groupValues(t, rows, vals, order, c.Measure.Group)
		if err != nil {
			return "", Fail, err
		}
		measured, status = checkRepeatedOrdering(groups, order)
		return measured, status, nil
	case c.Measure.Repeated:
		measured, status = checkRepeatedValue(vals, want, c.Tolerance.slack(want))
		return measured, status, nil
	case order != nil:
		return checkOrdering(t, rows, vals, order, c)
	}
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

// groupValues collects the values of the selected rows by their group column; every group of
// order must have at least one.
func groupValues(t *report.Table, rows [][]string, vals []float64, order []string, group string) (map[string][]float64, error) {
	g, err := t.Column(group)
	if err != nil {
		return nil, err
	}
	groups := map[string][]float64{}
	for i, r := range rows {
		groups[r[g]] = append(groups[r[g]], vals[i])
	}
	for _, name := range order {
		if len(groups[name]) == 0 {
			return nil, fmt.Errorf("no selected row has %s = %q", group, name)
		}
	}
	return groups, nil
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
