package artifact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// GoTest is the Output of claims checked by Go tests: the claim's command is
// "go test ./<package> -run <regexp> -json", whose output is read as test2json events (the Go
// toolchain's machine-readable test report), and the claim passes when at least one test ran and
// every test and subtest it ran passed. The tests assert the identities with their own
// tolerances; their log text is not read.
const GoTest = "go-test"

// testEvent is one test2json event (cmd/test2json).
type testEvent struct {
	Action string
	Test   string
	Output string
}

// checkGoTest reads the test2json events of a go test run: pass when tests ran and none failed
// or was skipped. runErr is the command's error (go test exits 1 on a failure or a build error).
func checkGoTest(out []byte, runErr error) (measured, status string, err error) {
	var passed, failed, skipped []string
	subtests := 0
	for _, line := range bytes.Split(out, []byte("\n")) {
		var ev testEvent
		if !bytes.HasPrefix(line, []byte("{")) || json.Unmarshal(line, &ev) != nil || ev.Test == "" {
			continue
		}
		top := !strings.Contains(ev.Test, "/")
		switch ev.Action {
		case "pass":
			if top {
				passed = append(passed, ev.Test)
			} else {
				subtests++
			}
		case "fail":
			failed = append(failed, ev.Test)
		case "skip":
			skipped = append(skipped, ev.Test)
		}
	}
	switch {
	case len(failed) > 0:
		return fmt.Sprintf("failed: %s", strings.Join(failed, ", ")), Fail, nil
	case len(skipped) > 0:
		return fmt.Sprintf("skipped: %s", strings.Join(skipped, ", ")), Fail, fmt.Errorf("a skipped test checks nothing")
	case runErr != nil:
		return "", Fail, fmt.Errorf("go test failed: %v", runErr)
	case len(passed) == 0:
		return "", Fail, fmt.Errorf("no test ran (does -run match a test?)")
	}
	slices.Sort(passed)
	return fmt.Sprintf("%s passed (%d subtests)", strings.Join(passed, ", "), subtests), Pass, nil
}

// testLog passes on the text of the test2json events written to it (their Output fields) and
// any other line as it is, so that a go test claim's progress log reads as a verbose test log.
// Flush writes a last line without a newline.
type testLog struct {
	w   io.Writer
	buf []byte
}

func (t *testLog) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		t.line(t.buf[:i])
		t.buf = t.buf[i+1:]
	}
}

func (t *testLog) line(l []byte) {
	var ev testEvent
	if bytes.HasPrefix(l, []byte("{")) && json.Unmarshal(l, &ev) == nil {
		io.WriteString(t.w, ev.Output)
		return
	}
	fmt.Fprintf(t.w, "%s\n", l)
}

// Flush writes what is left of an unfinished last line.
func (t *testLog) Flush() {
	if len(t.buf) > 0 {
		t.line(t.buf)
		t.buf = nil
	}
}
