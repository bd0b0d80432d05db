package zoo

import "github.com/fgn-paper/fgn/fgn/backend"

var testBackend = backend.MustNew()
