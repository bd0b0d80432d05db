// Package hook carries the functions of package fgn that fgn/paper exposes for checks and
// notebooks but that fgn does not export to model trainers: paper imports fgn, so fgn cannot
// import paper, and the functions stay unexported in fgn, where its solver uses them.
//
// Package fgn sets every variable in an init function, to a function whose signature uses
// fgn's types; paper, which imports fgn and therefore runs after that init, asserts the
// signature it expects. fgn/paper's tests call every one of them.
package hook

var (
	// MarginVJP is func(fgn.Linearization, gradS, a *Node) fgn.Vec: Jᵀ a for the margin Jacobian.
	MarginVJP any
	// MarginJVP is func(fgn.Linearization, gradS *Node, beta fgn.Vec) *Node: J β.
	MarginJVP any
	// GGNOperator is func(fgn.Linearization, probs, lambda *Node) func(fgn.Vec) fgn.Vec: SGN's
	// damped softmax-GGN product.
	GGNOperator any
	// CG is func(op func(fgn.Vec) fgn.Vec, rhs, x0 fgn.Vec, s fgn.CGSettings) (x fgn.Vec,
	// iterations, residual *Node): conjugate gradients unrolled in the graph.
	CG any
	// RowRHS is func(*fgn.Direction) *Node: the right-hand side of FGN's row system.
	RowRHS any
	// AffineMarginGram is func(featureGram, gradS *Node) *Node: the affine head's margin Gram.
	AffineMarginGram any
	// ValidateSolve is func(fgn.Settings) error: the settings a direction uses (all but α).
	ValidateSolve any
)
