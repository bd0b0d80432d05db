package artifact

import (
	"strings"
	"testing"

	"github.com/fgn-paper/fgn/internal/mdtext"
)

// TestWriteMarkdown checks that the result table renders every cell literally: pipes and
// emphasis characters escaped, newlines joined.
func TestWriteMarkdown(t *testing.T) {
	var b strings.Builder
	results := []Result{{ID: "eq3.6_batched", Reference: "eq. (3.6)", Expected: "a|b", Measured: "rho*1/(C-1)",
		Status: "pass", Seconds: 1.5, Detail: "cg_max_iterations=5\nsecond line"}}
	if err := WriteMarkdown(&b, "smoke", results); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	want := "| eq3.6\\_batched | eq. (3.6) | a\\|b | rho\\*1/(C-1) | pass | 1.5 | cg\\_max\\_iterations=5 second line |"
	if !strings.Contains(md, want) {
		t.Errorf("table lacks %q:\n%s", want, md)
	}
	for _, p := range mdtext.StrayEmphasis(md) {
		t.Errorf("%s", p)
	}
}
