package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fgn-paper/fgn/internal/atomicfile"
)

// notebook is an .ipynb document kept as generic JSON, so that fields nbcheck does not know about
// survive -update unchanged.
type notebook struct {
	doc   map[string]any
	cells []map[string]any
}

func readNotebook(path string) (*notebook, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	raw, _ := doc["cells"].([]any)
	nb := &notebook{doc: doc}
	for i, c := range raw {
		cell, ok := c.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: cell %d is not an object", path, i)
		}
		nb.cells = append(nb.cells, cell)
	}
	return nb, nil
}

// write saves the notebook the way nbformat does (sorted keys, one-space indent, no HTML escaping).
func (nb *notebook) write(path string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(nb.doc); err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
}

// normalise replaces the repository path in text outputs and drops execution timestamps.
func (nb *notebook) normalise(root string) {
	for _, cell := range nb.cells {
		if md, ok := cell["metadata"].(map[string]any); ok {
			delete(md, "execution")
		}
		for _, out := range outputs(cell) {
			if text, ok := out["text"]; ok {
				out["text"] = strings.ReplaceAll(joinText(text), root, "<repository>")
			}
		}
	}
}

func outputs(cell map[string]any) []map[string]any {
	raw, _ := cell["outputs"].([]any)
	var outs []map[string]any
	for _, o := range raw {
		if m, ok := o.(map[string]any); ok {
			outs = append(outs, m)
		}
	}
	return outs
}

// joinText returns a notebook multiline string (a string or a list of strings) as one string.
func joinText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		var sb strings.Builder
		for _, s := range t {
			str, _ := s.(string)
			sb.WriteString(str)
		}
		return sb.String()
	}
	return ""
}

var (
	exitStatus = regexp.MustCompile(`(?m)^exit status \d+`)
	// failedCheck is nb.FailedPrefix; nbcheck does not import package nb to stay free of GoNB.
	failedCheck = "CHECK FAILED"
)

// failures lists the failed cells of an executed notebook.
func (nb *notebook) failures() []string {
	var problems []string
	for i, cell := range nb.cells {
		for _, out := range outputs(cell) {
			if out["output_type"] == "error" {
				problems = append(problems, fmt.Sprintf("cell %d: error output: %v %v", i, out["ename"], out["evalue"]))
				continue
			}
			text := joinText(out["text"])
			if data, ok := out["data"].(map[string]any); ok {
				text += joinText(data["text/plain"]) + joinText(data["text/html"])
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(line, "panic:") || strings.Contains(line, failedCheck) || exitStatus.MatchString(line) {
					problems = append(problems, fmt.Sprintf("cell %d: %s", i, strings.TrimSpace(line)))
				}
			}
		}
	}
	return problems
}

// compare lists the differences between the committed notebook and the executed one.
func compare(committed, executed *notebook) []string {
	if len(committed.cells) != len(executed.cells) {
		return []string{fmt.Sprintf("%d cells committed, %d executed", len(committed.cells), len(executed.cells))}
	}
	var problems []string
	for i := range committed.cells {
		a, b := committed.cells[i], executed.cells[i]
		if a["cell_type"] != b["cell_type"] || joinText(a["source"]) != joinText(b["source"]) {
			problems = append(problems, fmt.Sprintf("cell %d: source differs", i))
			continue
		}
		loose := slices.Contains(tags(a), "machine-dependent")
		streamsA, othersA := split(outputs(a))
		streamsB, othersB := split(outputs(b))
		for _, name := range []string{"stdout", "stderr"} {
			if !loose && !textMatches(streamsA[name], streamsB[name]) {
				problems = append(problems, fmt.Sprintf("cell %d: %s differs (outputs not up to date?):\ncommitted: %q\nproduced:  %q",
					i, name, streamsA[name], streamsB[name]))
			}
		}
		if len(othersA) != len(othersB) {
			problems = append(problems, fmt.Sprintf("cell %d: %d rich outputs committed, %d produced (outputs not up to date?)", i, len(othersA), len(othersB)))
			continue
		}
		for k := range othersA {
			if p := compareOutput(othersA[k], othersB[k], loose); p != "" {
				problems = append(problems, fmt.Sprintf("cell %d, rich output %d: %s", i, k, p))
			}
		}
	}
	return problems
}

// split separates a cell's outputs into its stream texts, concatenated per stream name, and its
// other outputs in order. GoNB forwards stdout, stderr and displayed data as they arrive, so how
// the text is chunked and interleaved with figures varies from run to run.
func split(outs []map[string]any) (streams map[string]string, others []map[string]any) {
	streams = map[string]string{}
	for _, out := range outs {
		if out["output_type"] == "stream" {
			name, _ := out["name"].(string)
			streams[name] += joinText(out["text"])
			continue
		}
		others = append(others, out)
	}
	return streams, others
}

func tags(cell map[string]any) []string {
	md, _ := cell["metadata"].(map[string]any)
	raw, _ := md["tags"].([]any)
	var out []string
	for _, t := range raw {
		if s, ok := t.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func compareOutput(a, b map[string]any, loose bool) string {
	if a["output_type"] != b["output_type"] {
		return fmt.Sprintf("kind %v committed, %v produced", a["output_type"], b["output_type"])
	}
	dataA, _ := a["data"].(map[string]any)
	dataB, _ := b["data"].(map[string]any)
	if !slices.Equal(sortedKeys(dataA), sortedKeys(dataB)) {
		return fmt.Sprintf("MIME types %v committed, %v produced", sortedKeys(dataA), sortedKeys(dataB))
	}
	if loose {
		return ""
	}
	if pa, ok := dataA["image/png"]; ok {
		if p := comparePNG(joinText(pa), joinText(dataB["image/png"])); p != "" {
			return p
		}
	}
	return ""
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var number = regexp.MustCompile(`[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`)

// textMatches reports whether two outputs agree: the same text between numbers (whitespace runs
// collapsed), and numbers equal to a relative 1e-2, or both below 1e-9 in magnitude.
func textMatches(a, b string) bool {
	partsA, numsA := splitNumbers(a)
	partsB, numsB := splitNumbers(b)
	if !slices.Equal(partsA, partsB) || len(numsA) != len(numsB) {
		return false
	}
	for i := range numsA {
		x, y := numsA[i], numsB[i]
		if math.Abs(x) <= 1e-9 && math.Abs(y) <= 1e-9 {
			continue
		}
		if !(math.Abs(x-y) <= 1e-2*math.Max(math.Abs(x), math.Abs(y))) {
			return false
		}
	}
	return true
}

func splitNumbers(s string) (parts []string, nums []float64) {
	last := 0
	for _, loc := range number.FindAllStringIndex(s, -1) {
		parts = append(parts, strings.Join(strings.Fields(s[last:loc[0]]), " "))
		v, err := strconv.ParseFloat(s[loc[0]:loc[1]], 64)
		if err != nil {
			v = math.NaN()
		}
		nums = append(nums, v)
		last = loc[1]
	}
	parts = append(parts, strings.Join(strings.Fields(s[last:]), " "))
	return parts, nums
}

// comparePNG checks that two base64 PNGs have the same size and differ in at most 1% of pixels
// (a pixel differs when a channel changes by more than 16 of 255).
func comparePNG(a, b string) string {
	imgA, errA := decodePNG(a)
	imgB, errB := decodePNG(b)
	if errA != nil || errB != nil {
		return fmt.Sprintf("cannot decode PNG: %v, %v", errA, errB)
	}
	if imgA.Bounds() != imgB.Bounds() {
		return fmt.Sprintf("figure size %v committed, %v produced", imgA.Bounds().Size(), imgB.Bounds().Size())
	}
	bounds := imgA.Bounds()
	changed := 0
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r1, g1, b1, a1 := imgA.At(x, y).RGBA()
			r2, g2, b2, a2 := imgB.At(x, y).RGBA()
			if channelDiff(r1, r2) || channelDiff(g1, g2) || channelDiff(b1, b2) || channelDiff(a1, a2) {
				changed++
			}
		}
	}
	if frac := float64(changed) / float64(bounds.Dx()*bounds.Dy()); frac > 0.01 {
		return fmt.Sprintf("figure differs in %.1f%% of its pixels", 100*frac)
	}
	return ""
}

func channelDiff(x, y uint32) bool {
	d := int64(x>>8) - int64(y>>8)
	return d > 16 || d < -16
}

func decodePNG(b64 string) (image.Image, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(b64, "\n", ""))
	if err != nil {
		return nil, err
	}
	return png.Decode(bytes.NewReader(raw))
}
