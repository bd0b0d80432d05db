"""The model zoo's CNN (experiments/zoo's cnn) in PyTorch: its products and steps, for bench/peer.py --cnn.

The model: a b×64 batch as b×1×8×8 images, two 3×3 convolutions of 16 channels with same padding
and bias, each followed by ReLU, flattened (1024) into a dense layer with bias to 10 logits, float32,
as `zoo.CNN` builds it with GoMLX's layers.Convolution and layers.DenseWithBias (PyTorch lays the
images out NCHW where GoMLX lays them out NHWC: the same products).

Products, each timed with the forward pass it needs (as BenchmarkZooProducts times them):
    forward        the logits, without a graph (torch.no_grad)
    forward+VJP    the logits, then J_zᵀu by reverse mode (torch.autograd.grad), u the logits
    forward+JVP    the logits, then J_z v for v the parameters, by the tangent pass written out
                   (conv2d of the tangents and of the primal activations, ReLU's mask, the dense
                   layer's two terms): the forward-mode products fgn.Linearize builds
    forward+JVP (dual numbers)  the same J_z v by torch.autograd.forward_ad, PyTorch's generic
                   forward mode
Steps:
    Adam           cross-entropy, backward, torch.optim.Adam (foreach), lr 1e-3
    FGN            FGN's step on these products as fgn.FGN() takes it at its defaults with every
                   CG iteration computed (BenchmarkZooFixedCG), product for product: the logits;
                   the margin quantities; the gradient J̃ᵀr̃ = b ĝ (one VJP); the noise estimate's
                   probe Σ σ_i g_i of random signs (one VJP); the whitened row system
                   (K + bλI)u = r̃ by CG with K applied matrix-free, CG_ITERATIONS iterations from
                   J̃ᵀr̃, one JVP and one VJP each (the VJP of the new residual, which the parameter
                   stopping rule tests); the back-projection accumulated from CG's VJPs; J_z d for
                   the step length on the GGN and the damping's model (one JVP); Levenberg-Marquardt
                   damping, whose ratio needs the loss at the trial point (one more forward pass).
                   The damping metric's per-tensor scalars and the floor's arithmetic, a few
                   element-wise operations, are left out.
"""

import copy
import time

import torch
import torch.autograd.forward_ad as fwad
import torch.nn.functional as F

BATCH, PIXELS, SIDE, CHANNELS, CLASSES = 128, 64, 8, 16, 10
CG_ITERATIONS, LAMBDA, STEP_SIZE, ADAM_LR = 5, 1.0, 1.0, 1e-3
# The steps taken before the timed ones, each of which starts from the state they reached
# (experiments/zoo's warmupSteps).
WARMUP_STEPS = 10
SATURATION_FLOOR = float(torch.finfo(torch.float32).eps) ** 2


def params(seed=1):
    """The CNN's parameters (conv1 kernel and bias, conv2 kernel and bias, dense weights and bias),
    initialised as GoMLX's layers do in distribution (scaled normal), requiring gradients."""
    gen = torch.Generator().manual_seed(seed)
    shapes = [(CHANNELS, 1, 3, 3), (CHANNELS,), (CHANNELS, CHANNELS, 3, 3), (CHANNELS,),
              (CLASSES, CHANNELS * PIXELS), (CLASSES,)]
    out = []
    for shape in shapes:
        fan_in = 1
        for d in shape[1:]:
            fan_in *= d
        scale = (2.0 / fan_in) ** 0.5 if len(shape) > 1 else 0.0
        out.append((torch.randn(shape, generator=gen) * scale).requires_grad_(True))
    return out


def batch(seed=1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(BATCH, PIXELS, generator=gen), torch.randint(0, CLASSES, (BATCH,), generator=gen)


def logits(w, x):
    h = x.reshape(-1, 1, SIDE, SIDE)
    h = F.relu(F.conv2d(h, w[0], w[1], padding=1))
    h = F.relu(F.conv2d(h, w[2], w[3], padding=1))
    return F.linear(h.flatten(1), w[4], w[5])


def tangent(w, x, v):
    """J_z v: the forward pass with its tangent, op by op (what forward mode builds)."""
    h = x.reshape(-1, 1, SIDE, SIDE)
    z1 = F.conv2d(h, w[0], w[1], padding=1)
    a1 = F.relu(z1)
    t1 = F.conv2d(h, v[0], v[1], padding=1) * (z1 > 0)
    z2 = F.conv2d(a1, w[2], w[3], padding=1)
    a2 = F.relu(z2)
    t2 = (F.conv2d(t1, w[2], padding=1) + F.conv2d(a1, v[2], v[3], padding=1)) * (z2 > 0)
    return F.linear(a2.flatten(1), w[4], w[5]), F.linear(t2.flatten(1), w[4]) + F.linear(a2.flatten(1), v[4], v[5])


def tangent_dual(w, x, v):
    """J_z v by PyTorch's forward-mode AD (dual numbers)."""
    with fwad.dual_level():
        out = logits([fwad.make_dual(p.detach(), t) for p, t in zip(w, v)], x)
        primal, jv = fwad.unpack_dual(out)
    return primal, jv


class Linearization:
    """The CNN linearised at w on batch x: the logits with their graph, J_zᵀm by reverse mode,
    J_z v by the tangent pass (jvp "tangent") or by dual numbers ("dual")."""

    def __init__(self, w, x, jvp):
        self.w, self.x = w, x
        self.z = logits(w, x)
        self.tangent = tangent_dual if jvp == "dual" else tangent

    def vjp(self, m):
        return torch.autograd.grad(self.z, self.w, m, retain_graph=True)

    def jvp(self, v):
        with torch.no_grad():
            return self.tangent(self.w, self.x, v)[1]


def margin(z, y):
    """Section 2's margin quantities, overflow-free as fgn.NewMargin: loss, p_†, q, ∇_z s (bench/peer.py's
    dense-head peer uses it too)."""
    rows = torch.arange(z.shape[0])
    z_star = z[rows, y]
    competitors = z.clone()
    competitors[rows, y] = -float("inf")
    m = competitors.amax(1, keepdim=True)
    shifted = torch.exp_(competitors.sub_(m))
    total = shifted.sum(1, keepdim=True)
    s = m[:, 0] + torch.log(total[:, 0]) - z_star
    grad_s = shifted.div_(total)  # ρ, then ρ with -1 at the true class
    grad_s[rows, y] = -1
    p_dagger, p_star = torch.sigmoid(s), torch.sigmoid(-s)
    return torch.nn.functional.softplus(s).mean(), p_dagger, p_star * p_dagger, grad_s


class FGN:
    """FGN's default step with the matrix-free row operator on autodiff products, every CG
    iteration computed: the noise estimate's probe, CG with the parameter stopping rule's VJPs, the
    step length on the GGN along d (τ ∈ [0, 1]) and Levenberg-Marquardt damping
    (fgn.LevenbergMarquardt: ρ < 0.25 → λ·1.5, ρ > 0.75 → λ·0.5, a step that raises the batch loss
    rejected)."""

    def __init__(self, w, x, y, jvp):
        self.w, self.x, self.y, self.lam, self.jvp = w, x, y, LAMBDA, jvp
        self.signs = torch.Generator().manual_seed(3)

    def __call__(self):
        lin = Linearization(self.w, self.x, self.jvp)
        with torch.no_grad():
            z = lin.z.detach()
            loss, p_dagger, q, grad_s = margin(z, self.y)
            b = z.shape[0]
            sqrt_q = torch.sqrt(torch.clamp(q, min=SATURATION_FLOOR))
            r_tilde = p_dagger / sqrt_q
            shift = b * self.lam
        factor = lambda u: lin.vjp((sqrt_q * u)[:, None] * grad_s)  # J̃ᵀu
        cofactor = lambda beta: sqrt_q * (lin.jvp(beta) * grad_s).sum(1)  # J̃ β
        lx = factor(r_tilde)  # J̃ᵀr̃ = b ĝ, CG's first product
        signs = torch.randint(0, 2, (b,), generator=self.signs).to(z.dtype).mul_(2).sub_(1)
        probe = lin.vjp((signs * p_dagger)[:, None] * grad_s)  # Σ σ_i g_i, the noise estimate's probe
        with torch.no_grad():
            s1 = sum(torch.dot(t.flatten(), t.flatten()) for t in probe) / b
            s2 = sum(torch.dot(t.flatten(), t.flatten()) for t in lx) / b ** 2
            self.noise = (s1 - s2) / (b - 1)  # the whole variance's estimate, as the floor takes it
            u = torch.zeros_like(r_tilde)
            r, p, lp = r_tilde.clone(), r_tilde.clone(), lx
            acc = [torch.zeros_like(t) for t in lx]  # J̃ᵀu, accumulated from CG's VJPs
            rr = torch.dot(r, r)
        for k in range(CG_ITERATIONS):
            with torch.no_grad():
                kp = cofactor(lp) + shift * p
                alpha = rr / torch.dot(p, kp)
                u.add_(alpha * p)
                for a, t in zip(acc, lp):
                    a.add_(alpha * t)
                r.sub_(alpha * kp)
                rr_new = torch.dot(r, r)
                beta = rr_new / rr
            lr = factor(r)  # J̃ᵀr, the parameter stopping rule's residual, and L p by recurrence
            with torch.no_grad():
                self.residual = sum(torch.dot(t.flatten(), t.flatten()) for t in lr).sqrt()
                lp = [t + beta * q for t, q in zip(lr, lp)]
                p = r + beta * p
                rr = rr_new
        with torch.no_grad():
            d = [-a for a in acc]  # d = −J̃ᵀu
            zd = lin.jvp(d)  # J_z d: the step length on the GGN and the damping's model
            probs = torch.softmax(z, 1)
            residual = probs.clone()
            residual[torch.arange(b), self.y] -= 1
            slope = (residual * zd).sum() / b  # gᵀd
            pz = (probs * zd).sum(1)
            curvature = ((probs * zd * zd).sum(1) - pz * pz).mean()  # dᵀH_GGN d
            norm2 = sum(torch.dot(t.flatten(), t.flatten()) for t in d)
            tau = (-slope / (curvature + self.lam * norm2)).clamp(0, 1)
            step = STEP_SIZE * tau
            predicted = -(step * slope + 0.5 * step * step * curvature)
            trial = [p_.detach() + step * t for p_, t in zip(self.w, d)]
            trial_loss = F.cross_entropy(logits(trial, self.x), self.y)
            rho = (loss - trial_loss) / predicted.clamp(min=1e-30)
            self.lam *= 1.5 if rho < 0.25 else 0.5 if rho > 0.75 else 1.0
            if trial_loss <= loss:
                for p_, t in zip(self.w, trial):
                    p_.copy_(t)
        return float(loss)

    def state(self):
        return [t.detach().clone() for t in self.w], self.lam

    def restore(self, state):
        with torch.no_grad():
            for p_, t in zip(self.w, state[0]):
                p_.copy_(t)
        self.lam = state[1]


class Adam:
    def __init__(self, w, x, y):
        self.w, self.x, self.y = w, x, y
        self.opt = torch.optim.Adam(w, lr=ADAM_LR, foreach=True)

    def __call__(self):
        self.opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(logits(self.w, self.x), self.y)
        loss.backward()
        self.opt.step()
        return float(loss)

    def state(self):
        return [t.detach().clone() for t in self.w], copy.deepcopy(self.opt.state_dict())

    def restore(self, state):
        with torch.no_grad():
            for p_, t in zip(self.w, state[0]):
                p_.copy_(t)
        self.opt.load_state_dict(copy.deepcopy(state[1]))


def timed(fn, calls):
    """Mean ms of `calls` calls of fn after one warm-up call."""
    fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return 1e3 * (time.perf_counter() - start) / calls


def products(calls):
    """ms per call of forward, forward+VJP, forward+JVP (tangent pass) and forward+JVP (dual numbers)."""
    w = params()
    x, _ = batch()
    v = [t.detach() for t in w]

    def forward():
        with torch.no_grad():
            logits(w, x)

    def forward_vjp():
        z = logits(w, x)
        torch.autograd.grad(z, w, z.detach())

    def forward_jvp():
        with torch.no_grad():
            tangent(w, x, v)

    def forward_jvp_dual():
        with torch.no_grad():
            tangent_dual(w, x, v)

    return {"forward": timed(forward, calls), "forward+VJP": timed(forward_vjp, calls),
            "forward+JVP": timed(forward_jvp, calls), "forward+JVP (dual numbers)": timed(forward_jvp_dual, calls)}


def step(method, steps, jvp="tangent"):
    """Mean ms of `steps` steps of method ("Adam" or "FGN", its JVPs by jvp: "tangent" or "dual"),
    each from the state that WARMUP_STEPS steps reached, restored untimed (as experiments/zoo's
    step benchmarks time theirs)."""
    w = params()
    x, y = batch()
    fn = Adam(w, x, y) if method == "Adam" else FGN(w, x, y, jvp)
    for _ in range(WARMUP_STEPS):
        fn()
    state = fn.state()
    total = 0.0
    for _ in range(steps):
        fn.restore(state)
        start = time.perf_counter()
        fn()
        total += time.perf_counter() - start
    return 1e3 * total / steps


def conv_products_ms(repeats=20):
    """Best-of-repeats ms of the matrix products a convolution of the CNN is as im2col, with torch:
    conv1 as [b·64, 9]·[9, 16], conv2 as [b·64, 144]·[144, 16], and the dense layer's
    [b, 1024]·[1024, 10]."""
    gen = torch.Generator().manual_seed(2)
    rows = BATCH * PIXELS
    shapes = {"conv1": (rows, 9, CHANNELS), "conv2": (rows, 9 * CHANNELS, CHANNELS),
              "dense": (BATCH, CHANNELS * PIXELS, CLASSES)}
    out = {}
    for name, (m, k, n) in shapes.items():
        a, b = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)
        a @ b
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
        out[name] = 1e3 * best
    return out


def floor_ms(kind, products_ms):
    """The sgemm-equivalent floor of one product or step: the matrix products its convolutions
    and dense layer cost as im2col (counted by kind), each at the time torch takes for that
    shape. A forward pass is conv1 + conv2 + dense; a JVP conv1 + 2 conv2 + 2 dense (one term
    per input with a tangent; conv1's input has none); a VJP conv1 (its kernel's) + 2 conv2
    (input and kernel) + 2 dense; an Adam step a forward and a VJP; an FGN step two forward passes
    (the logits and the trial point's), CG_ITERATIONS + 1 JVPs and CG_ITERATIONS + 2 VJPs."""
    one = {"forward": (1, 1, 1), "JVP": (1, 2, 2), "VJP": (1, 2, 2)}
    counts = {"forward": {"forward": 1}, "forward+JVP": {"forward": 1, "JVP": 1},
              "forward+VJP": {"forward": 1, "VJP": 1}, "Adam": {"forward": 1, "VJP": 1},
              "FGN": {"forward": 2, "JVP": CG_ITERATIONS + 1, "VJP": CG_ITERATIONS + 2}}[kind]
    total = 0.0
    for product, count in counts.items():
        c1, c2, dense = one[product]
        total += count * (c1 * products_ms["conv1"] + c2 * products_ms["conv2"] + dense * products_ms["dense"])
    return total
