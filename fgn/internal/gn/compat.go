package gn

// Upstream bugs this package works around, one entry each: what fails, the workaround and where it
// is, the versions checked, and the test in compat_test.go that reproduces it. Each test passes
// while the bug is present and, once an upgrade fixes it, fails with a message naming the
// workaround to delete. Call sites name their entry ("see compat.go: compatX");
// TestCompatCitations checks that every name cited exists and every entry is cited. Package fgn's
// are in fgn/compat.go.
const (
	// compatWhileEarlyOutputs: the pure-Go backend fails ("index out of range") on a graph whose only
	// outputs are early outputs of CG's While loop (neither its first nor its last). cgState.flatten
	// lists the iterate x last, the output callers keep (cg.go). Checked: compute v0.1.3 to v0.1.14.
	// Test: TestCompatWhileEarlyOutputs.
	compatWhileEarlyOutputs = "only early outputs of a While loop"

	// compatScalarCache: GoMLX caches scalar constants per graph rather than per function, so a
	// scalar first created inside a closure and later requested by the main function is a node of the
	// wrong scope ("uses a node from a different function scope"). whileLoop (cg.go) builds its
	// closures' bodies once in the main function first (dead code the backends remove). Checked:
	// gomlx v0.28.3 to v0.28.16. Test: TestCompatScalarCache.
	compatScalarCache = "scalar constants cached per graph, not per function"
)
