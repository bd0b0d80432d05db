// Package wordstest gives tests that need data/words the task, or a skip that names the apt
// packages to install.
package wordstest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/fgn-paper/fgn/data/words"
)

// RequireEnv is the environment variable that makes Require fail a test, rather than skip it,
// when the dictionaries are missing: CI (.ci/run) sets it, so that its tests never skip silently.
const RequireEnv = "FGN_REQUIRE_WORDS"

// Require skips the test when dictionaries of words.Languages are not installed, with a message
// naming the apt packages to install, or fails it when RequireEnv is set.
func Require(t testing.TB) {
	t.Helper()
	missing := words.Missing(words.DictionaryDir)
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("%s: the hunspell dictionaries of %d languages are missing: apt-get install %s",
		t.Name(), len(missing), strings.Join(missing, " "))
	if os.Getenv(RequireEnv) != "" {
		t.Fatal(msg)
	}
	t.Skipf("%s (set %s=1 to fail instead)", msg, RequireEnv)
}

var load = sync.OnceValues(func() (*words.Data, error) { return words.Load(words.DefaultPerLanguage) })

// Load returns the task at words.DefaultPerLanguage, loaded once per test binary, after Require.
func Load(t testing.TB) *words.Data {
	t.Helper()
	Require(t)
	data, err := load()
	if err != nil {
		t.Fatal(err)
	}
	return data
}
