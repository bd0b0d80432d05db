// Package cli holds the exit-status convention of the repository's commands (fgn, data/fetch):
// 0 for success and for requested help, 2 for a command line that cannot be run as given or a
// configuration that makes the command unusable (both found before any work), 1 for any other
// failure. An error is printed once, by Exit.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// UsageError is a command line that cannot be run as given: an unknown flag or subcommand, an
// invalid value, flags that exclude each other.
type UsageError struct{ Err error }

// ConfigError is an environment or setting that makes the command unusable: an unusable
// backend, a missing tool, a malformed manifest.
type ConfigError struct{ Err error }

func (e UsageError) Error() string  { return e.Err.Error() }
func (e UsageError) Unwrap() error  { return e.Err }
func (e ConfigError) Error() string { return e.Err.Error() }
func (e ConfigError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// Exit prints err once to w, after prefix and ": ", and returns the exit status: 0 for nil and
// flag.ErrHelp (the help was printed), 2 for a UsageError or ConfigError, 1 otherwise.
func Exit(err error, w io.Writer, prefix string) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(w, "%s: %v\n", prefix, err)
	var ue UsageError
	var ce ConfigError
	if errors.As(err, &ue) || errors.As(err, &ce) {
		return 2
	}
	return 1
}
