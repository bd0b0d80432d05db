package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"testing"
)

func TestExit(t *testing.T) {
	for _, tc := range []struct {
		err     error
		code    int
		printed string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{fmt.Errorf("parse: %w", flag.ErrHelp), 0, ""},
		{Usagef("--damping %g: want > 0", 0.0), 2, "fgn: --damping 0: want > 0\n"},
		{fmt.Errorf("train: %w", ConfigError{errors.New("GOMLX_BACKEND=\"bogus\"")}), 2, "fgn: train: GOMLX_BACKEND=\"bogus\"\n"},
		{errors.New("claim failed"), 1, "fgn: claim failed\n"},
	} {
		var w bytes.Buffer
		if code := Exit(tc.err, &w, "fgn"); code != tc.code || w.String() != tc.printed {
			t.Errorf("Exit(%v) = %d, printed %q; want %d, %q", tc.err, code, w.String(), tc.code, tc.printed)
		}
	}
}
