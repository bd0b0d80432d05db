package jvp

// Upstream gaps and bugs this package works around, one entry each: what fails, the workaround
// and where it is, the versions checked, and the test in compat_test.go that reproduces it. Each
// test passes while the gap is there and, once an upgrade closes it, fails with a message naming
// the workaround to delete. Call sites name their entry ("see compat.go: compatX");
// TestCompatCitations checks that every name cited in the module exists and that every entry is
// cited.
const (
	// compatOpParams: GoMLX exposes an op's inputs (Node.Inputs) and a way to rebuild it
	// (Node.CloneWithInputs), but not its static parameters (DotGeneral's axes, ReduceWindow's
	// window, FusedDense's configuration, …), which the pooling and FusedDense rules, the
	// relayout and convolution passes, MatchAffine and the clone of an attention layer need, nor
	// a fused node's decomposed form for reverse mode (Node.vjpAlternateOutputs, which the clone
	// of a fused node must carry: compatFusedCloneGradient). params.go reads them by reflection,
	// from the unexported field Node.inputs and the unexported fields of the generated nodeInputs
	// structs (a pointer, which reflection does not hand out, through its address); it is the only
	// file of the module that reflects on GoMLX's types. Upstream, an accessor generated with the
	// ops would remove it: the parameter structs exported (graph.NodeInputsDotGeneral with
	// LhsContractingAxes, …) and returned by a method of Node,
	//
	//	func (n *Node) OpInputs() NodeInputs
	//
	// so that n.OpInputs().(*graph.NodeInputsDotGeneral).LhsContractingAxes reads a parameter
	// with the compiler's checks. Checked: gomlx v0.28.16. Test: TestCompatOpParams, the canary:
	// it reads every parameter params.go reads on a graph of every op it reads them from, fails
	// naming the field when GoMLX renames or retypes one, and fails naming this entry once Node
	// has the accessor.
	compatOpParams = "op parameters readable only by reflection"

	// compatReduceMaxTies: GoMLX's VJP of ReduceMax and ReduceMin (reduceMaxVJP, reduceMinVJP)
	// credits the cotangent to every entry that attains the extremum, so at ties its gradient is
	// the sum over the tied entries, not a derivative: for f(w) = max(w², w²) at w = 2,
	// graph.Gradient gives 8 where f′(2) = 4. Where the tied entries are one parameter (an
	// embedding row repeated in a sequence, then max-pooled over it) the gradient, and a forward
	// rule built on it by the double VJP, are off by the number of ties. The forward rule averages
	// over the tied entries instead (reduceExtremumTangent, rules_reduce.go), and
	// Linearization.VJP differentiates through its transpose (Adjoints: reduceExtremumAdjoint),
	// so the products stay adjoint; graph.Gradient is left as it is. Checked: gomlx v0.28.16.
	// Test: TestCompatReduceMaxTies.
	compatReduceMaxTies = "ReduceMax and ReduceMin gradients sum over ties"

	// compatConvVJPNotDifferentiable: GoMLX's VJP of ConvGeneral (convGeneralVJP) cannot be
	// differentiated again: the gradient of its kernel VJP with respect to the cotangent builds a
	// ConvGeneral whose channel axes do not match ("we must have inputChannels (=…) =
	// kernelInputChannels (=…)"). The double-VJP identity J v = ∇_a⟨Jᵀa, v⟩ therefore fails on any
	// convolutional model, with or without fusion. The package propagates tangents forward
	// instead, with a ConvGeneral rule of its own (multilinearTangent in Rules). Checked: gomlx
	// v0.28.16, compute v0.1.14. Test: TestCompatConvVJPNotDifferentiable.
	compatConvVJPNotDifferentiable = "ConvGeneral VJP cannot be differentiated again"

	// compatFusedDenseVJPNoGradient: GoMLX's VJP of FusedDense (what layers.Dense and nn.Dense build
	// on a backend that fuses Dense, the pure-Go backend included) is the op FusedDenseVJP, which
	// has no VJP of its own, so the double VJP of any model with a layers.Dense fails ("no gradient
	// is defined"). FusedDense has a forward rule (rules_fused.go), and its VJP is never
	// differentiated. Checked: gomlx v0.28.16, compute v0.1.14 (pure-Go backend). Test:
	// TestCompatFusedDenseVJPNoGradient.
	compatFusedDenseVJPNoGradient = "FusedDenseVJP has no gradient"

	// compatFusedActivationVJPClone: GoMLX's Node.CloneWithInputs of a FusedActivationVJP node
	// with the activation's input x reads its new inputs as (y, x, dOutput), but the node lists
	// them (Node.Inputs) as (y, dOutput, x), so a clone given its node's own inputs swaps x and
	// dOutput and computes another product. cloneNode (params.go) reorders them. Checked:
	// gomlx v0.28.16. Test: TestCompatFusedActivationVJPClone.
	compatFusedActivationVJPClone = "FusedActivationVJP clones with x and dOutput swapped"

	// compatMultiOutputClone: GoMLX's Node.CloneWithInputs of an op that may return extra outputs
	// for its VJP (FusedScaledDotProductAttention, BatchNormForTraining, RNGBitGenerator) returns
	// the first input of the node it rebuilds (r0.inputNodes[0]), which is the op's output only when
	// the backend returned the extra outputs (splitNode then makes a node per output); the pure-Go
	// backend returns one, so the clone of an attention layer is its query, and
	// Linearization.At (fgn's LogitsAt, and so the Levenberg-Marquardt trial loss) of every model
	// with GoMLX's MultiHeadAttention was wrong. cloneNode (params.go) rebuilds
	// FusedScaledDotProductAttention from its parameters with BackendFusedScaledDotProductAttention.
	// Checked: gomlx v0.28.16, compute v0.1.14 (pure-Go backend). Test: TestCompatMultiOutputClone.
	compatMultiOutputClone = "CloneWithInputs of a one-output multi-output op returns its first input"

	// compatFusedCloneGradient: a fused op that GoMLX differentiates through its decomposed form
	// (graph.InternalFusedOpCaller keeps that form on the node, in the unexported field
	// Node.vjpAlternateOutputs: FusedLayerNorm, FusedSoftmax, …) loses it in Node.CloneWithInputs,
	// so graph.Gradient of a clone fails ("no gradient is defined yet"). Linearization.VJP
	// differentiates a clone wherever an Adjoint replaces a node (a max over a sequence before a
	// layer normalisation, as GoMLX's imdb models read out), and failed there. cloneNode
	// (params.go) rebuilds the decomposed form on the clone's inputs and sets it on the clone.
	// Checked: gomlx v0.28.16, compute v0.1.14 (pure-Go backend). Test: TestCompatFusedCloneGradient.
	compatFusedCloneGradient = "CloneWithInputs drops a fused node's decomposed form for reverse mode"

	// compatWhileGradient: a Gradient built inside a While body fails on the pure-Go backend
	// ("input 0 for node Mul not computed yet"): it compiles a closure's execution plan when the
	// closure is built, before its graph optimiser (ImplicitBroadcastFusion) rewires the
	// element-wise consumers of a same-rank or scalar BroadcastInDim to the broadcast's input, and
	// Gradient builds such broadcasts of the closure's own nodes. A Linearization's products are
	// cloned, not differentiated, when applied, and walk.clone builds each such broadcast through
	// a unit axis and a reshape (unfusedBroadcast, walk.go), which the optimiser leaves alone;
	// walk.closureSafe reports the one form it cannot rebuild, a same-rank broadcast that permutes
	// axes, and Linearization.WhileSafe is then false (fgn's CG is unrolled on such products:
	// inWhileLoop, whileLoop in fgn/internal/gn/cg.go). Checked: gomlx v0.28.16, compute v0.1.3 to
	// v0.1.14. Test: TestCompatWhileGradient.
	compatWhileGradient = "Gradient inside a While body"

	// compatPadVJPNegative: GoMLX's VJP of Pad (padVJP) slices the cotangent from each axis's
	// Start, so a Pad with a negative padding (a crop) has no VJP: building its gradient panics
	// ("Slice: limit index … is out of bounds"). LowerConvolutions, whose lowered graph GoMLX's
	// reverse mode differentiates, pads only by non-negative paddings and cuts its patches by
	// Slice; the products' convolution pass, never differentiated, cuts by Pad (convlower.go:
	// lowering). Checked: gomlx v0.28.16. Test: TestCompatPadVJPNegative.
	compatPadVJPNegative = "Pad's VJP rejects negative paddings"

	// compatDotVJPAxesOrder: GoMLX's VJP of DotGeneral with respect to the lhs permutes its axes
	// when the rhs's contracting axes are not in increasing order: the VJP has the wrong shape when
	// the permuted dimensions differ ("invalid shape … for calculated AccumulatedVJP") and wrong
	// values when they are equal, as for a channels-first 3×3 kernel [o, c, 3, 3] contracted on
	// (3×3, c). LowerConvolutions contracts a kernel laid out with its contracting axes first and
	// in order; the products' convolution pass, never differentiated, contracts the kernel in the
	// axes it has (convlower.go: lowering). Checked: gomlx v0.28.16. Test:
	// TestCompatDotVJPAxesOrder.
	compatDotVJPAxesOrder = "DotGeneral's VJP misreads unordered contracting axes"

	// compatConvVJPEvenKernel: GoMLX's VJP of ConvGeneral with respect to the input
	// (convVJPWrtX) pads its reverse convolution as if every kernel were centred, so along a
	// spatial axis whose kernel size is even the VJP is shifted by one position: for
	// y_i = 10 x_i + x_(i+1), the gradient of Σ y is (11, 11, 11, 1, 0) instead of
	// (10, 11, 11, 11, 1). GoMLX's own gradients keep the bug (an Adam step on such a model
	// descends a wrong gradient); Linearization.VJP differentiates such a convolution lowered to
	// a product instead (Adjoints: convAdjoint), so that its products stay adjoint to the JVP's.
	// Checked: gomlx v0.28.16 and its repository's head. Test: TestCompatConvVJPEvenKernel.
	compatConvVJPEvenKernel = "ConvGeneral's input VJP shifted for even kernel sizes"
)
