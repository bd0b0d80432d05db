// Package report is the one CSV layer of the experiments: every trace, sweep and table they
// write is a [Table] with provenance comments, written atomically and read back by the same
// code (plots and summaries are made from the CSV files, never from in-memory state only).
//
// File layout: zero or more comment lines "# key: value" (backend, device, profile, command,
// date, ...), one header line, then one line per row. Numbers are written with the shortest
// representation that round-trips (strconv 'g', -1).
package report

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/fgn-paper/fgn/internal/atomicfile"
)

// Table is a CSV table with provenance comments.
type Table struct {
	Comments [][2]string // (key, value) pairs written as "# key: value"
	Header   []string
	Rows     [][]string
}

// NewTable returns an empty table with the given column names.
func NewTable(header ...string) *Table { return &Table{Header: header} }

// Comment appends a provenance comment.
func (t *Table) Comment(key, value string) { t.Comments = append(t.Comments, [2]string{key, value}) }

// Lookup returns the value of the first comment with the given key.
func (t *Table) Lookup(key string) (string, bool) {
	for _, kv := range t.Comments {
		if kv[0] == key {
			return kv[1], true
		}
	}
	return "", false
}

// Add appends a row; values are formatted by [Format]. It panics if the number of values
// differs from the number of columns (a programming error, not an input error).
func (t *Table) Add(values ...any) {
	if len(values) != len(t.Header) {
		panic(fmt.Sprintf("report: row of %d values for %d columns", len(values), len(t.Header)))
	}
	row := make([]string, len(values))
	for i, v := range values {
		row[i] = Format(v)
	}
	t.Rows = append(t.Rows, row)
}

// Format renders a cell: floats in the shortest round-tripping form, everything else with %v.
func Format(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case string:
		return x
	default:
		return fmt.Sprint(v)
	}
}

// Column returns the index of the named column, or an error naming the missing column.
func (t *Table) Column(name string) (int, error) {
	for i, h := range t.Header {
		if h == name {
			return i, nil
		}
	}
	return -1, fmt.Errorf("report: no column %q (columns: %s)", name, strings.Join(t.Header, ", "))
}

// Floats returns the named column parsed as float64.
func (t *Table) Floats(name string) ([]float64, error) {
	c, err := t.Column(name)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(t.Rows))
	for i, r := range t.Rows {
		if out[i], err = strconv.ParseFloat(r[c], 64); err != nil {
			return nil, fmt.Errorf("report: row %d column %q: %w", i, name, err)
		}
	}
	return out, nil
}

// WriteTo writes the table in the package's CSV layout.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	for _, kv := range t.Comments {
		if strings.ContainsAny(kv[0]+kv[1], "\n\r") {
			return cw.n, fmt.Errorf("report: comment %q contains a newline", kv[0])
		}
		fmt.Fprintf(cw, "# %s: %s\n", kv[0], kv[1])
	}
	c := csv.NewWriter(cw)
	if err := c.Write(t.Header); err != nil {
		return cw.n, err
	}
	if err := c.WriteAll(t.Rows); err != nil {
		return cw.n, err
	}
	return cw.n, cw.err
}

// Write writes the table to path atomically.
func (t *Table) Write(path string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := t.WriteTo(w)
		return err
	})
}

// Read reads a table written by [Table.Write].
func Read(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := &Table{}
	br := bufio.NewReader(f)
	for {
		b, err := br.Peek(1)
		if err != nil || b[0] != '#' {
			break
		}
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: truncated comment line", path)
		}
		key, value, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ":")
		t.Comments = append(t.Comments, [2]string{strings.TrimSpace(key), strings.TrimSpace(value)})
	}
	records, err := csv.NewReader(br).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(records) == 0 {
		return nil, fmt.Errorf("%s: no header line", path)
	}
	t.Header, t.Rows = records[0], records[1:]
	return t, nil
}

type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
