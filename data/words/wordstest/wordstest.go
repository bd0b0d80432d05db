// Package wordstest gives tests that train on data/words the task or a clear skip.
package wordstest

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/fgn-paper/fgn/data/words"
)

// RequireEnv is the environment variable that makes Load fail a test, rather than skip it, when
// the dictionaries are missing: CI (.ci/run) sets it, so that its tests never skip silently.
const RequireEnv = "FGN_REQUIRE_WORDS"

var load = sync.OnceValues(func() (*words.Data, error) { return words.Load(words.DefaultPerLanguage) })

// Load returns the task at words.DefaultPerLanguage, loaded once per test binary. When the
// dictionaries are missing it skips the test with a message naming the apt packages to install,
// or fails it when RequireEnv is set; any other error fails it.
func Load(t testing.TB) *words.Data {
	t.Helper()
	data, err := load()
	switch {
	case err == nil:
		return data
	case errors.Is(err, words.ErrMissing) && os.Getenv(RequireEnv) == "":
		t.Skipf("%v (set %s=1 to fail instead)", err, RequireEnv)
	}
	t.Fatal(err)
	return nil
}
