#!/usr/bin/python3
"""Side-by-side step benchmark: the Go BenchmarkStep against a PyTorch CPU peer.

One command (from the repository root):

    bench/peer.py            # or: /usr/bin/python3 bench/peer.py [--steps-small N] [--steps-large N]
    bench/peer.py --scale    # the growth axes: BenchmarkStepScale's shapes, table and figure

It builds the experiments/train test binary in the SIMD build (GOEXPERIMENT=simd) with go.mod's
toolchain (GOTOOLCHAIN set from its toolchain line, as .ci/toolchain.sh does), then for every
shape and every method runs the Go benchmark (BenchmarkStep/C=<C>/<method> at b=512; with
--scale, BenchmarkStepScale/b=<b>/C=<C>/<method>) and the same step in PyTorch (float32,
2 threads), alternating the two so that both see the same load, measures the sgemm roofline
(one b×d×C product) with torch and numpy, and rewrites the peer section of BENCHMARKS.md (with
--scale, its scale section) with the ratio table, the machine, versions, date and load
averages. --scale also writes the measurements to bench/step_scale.csv and draws them with
`go run ./bench/scalefig` (bench/step_scale.{svg,png,pdf}, the project's plot style).

Requirements (Debian; a development tool, never a runtime dependency of the project):
    apt-get install python3-torch python3-numpy python3-threadpoolctl libopenblas0-pthread

The PyTorch steps are the project's algorithms on the affine head z = h W + 1 bᵀ with the head's
closed-form Jacobian products (J_z V = h V + 1 vᵀ, J_zᵀ m = (hᵀ m, 1ᵀ m)), written as a careful
PyTorch user would, with the hyper-parameters of BenchmarkStep (experiments/train/step_bench_test.go,
Figure 1(a)'s step):
    Adam           torch.optim.Adam (foreach), lr 1e-3, on the closed-form gradient
    SGN            parameter-space CG on the full softmax GGN + λI, warm-started from the previous
                   direction, λ = 1, ≤ 5 iterations, relative tolerance 1e-5, step size 1
    FGN            row-space CG on the closed-form whitened row Gram (appendix F.2), the feature
                   Gram h hᵀ + 1 computed once per batch, one back-projection
    FGNMatrixFree  row-space CG applying the row operator by one head VJP and JVP (eq. 4.8), the
                   back-projection accumulated from CG's VJPs
Both FGN variants whiten rows with q ≥ ε² and solve saturated rows unwhitened, as fgn.FGNDirection,
and stop CG on the whitened row residual ‖e‖ ≤ tol·‖r̃‖, the paper's rule, which Figure 1(a) and
BenchmarkStep use (fgn.StopWhitenedRowResidual).
The Go steps also skip a step that is not finite (the training loop's guard); these do not.

On processors where the environment sets OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (to work around
old OpenBLAS builds), both are removed for this command alone (the script re-executes itself
without them) and the kernel OpenBLAS then runs is reported.
"""

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(v in os.environ for v in OPENBLAS_VARS):
    env = {k: v for k, v in os.environ.items() if k not in OPENBLAS_VARS}
    env["FGN_PEER_UNSET_OPENBLAS"] = ",".join(v for v in OPENBLAS_VARS if v in os.environ)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from threadpoolctl import threadpool_info  # noqa: E402

BATCH, DIM = 512, 2048
CLASSES = (256, 4096)
# BenchmarkStepScale's shapes (experiments/train/step_bench_test.go's scaleShapes), (b, C).
SCALE_SHAPES = ((512, 256), (512, 4096), (512, 32768), (128, 4096), (2048, 4096))
# The method names of the Go benchmarks and the project's names for them (experiments/method).
METHOD_IDS = {"Adam": "adam", "SGN": "sgn", "FGN": "fgn", "FGNMatrixFree": "fgn-matrix-free"}
METHOD_LABELS = {"Adam": "Adam", "SGN": "SGN", "FGN": "FGN (closed-form Gram)", "FGNMatrixFree": "FGN (matrix-free)"}
METHODS = ("Adam", "SGN", "FGN", "FGNMatrixFree")
ADAM_LR, STEP_SIZE, LAMBDA, CG_MAX_ITER, CG_TOL = 1e-3, 1.0, 1.0, 5, 1e-5
SATURATION_FLOOR = float(np.finfo(np.float32).eps) ** 2
THREADS = 2
SECTION_BEGIN = "<!-- bench/peer.py: begin -->"
SECTION_END = "<!-- bench/peer.py: end -->"


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


# ---------------------------------------------------------------- PyTorch steps


def affine_jvp(h, v):
    """J_z (V, v) = h V + 1 vᵀ."""
    return torch.addmm(v[1], h, v[0])


def affine_vjp(ht, m):
    """J_zᵀ m = (hᵀ m, 1ᵀ m); ht is hᵀ, laid out once per batch."""
    return ht @ m, m.sum(0)


def cg(op, rhs, x0, factor=None):
    """Conjugate gradients on a list of tensors, as fgn/paper.CG: at most CG_MAX_ITER iterations, stop
    when ‖r‖ ≤ CG_TOL‖rhs‖. With factor (the operator is (Lᵀ L + σI), op(v, Lv) its product given
    Lv = factor(v)) it also returns L x, accumulated from the products L p it makes, as fgn's
    solver does for FGN (matrix-free)'s back-projection."""
    dot = lambda a, b: sum(torch.dot(x.reshape(-1), y.reshape(-1)) for x, y in zip(a, b))
    apply = (lambda v: (op(v), None)) if factor is None else (lambda v: (lambda lv: (op(v, lv), lv))(factor(v)))
    lx = None
    if x0 is None:
        x = [torch.zeros_like(t) for t in rhs]
        r = [t.clone() for t in rhs]
    else:
        x = [t.clone() for t in x0]
        ax, lx = apply(x0)
        r = [b - a for b, a in zip(rhs, ax)]
    threshold = CG_TOL**2 * float(dot(rhs, rhs))
    p = [t.clone() for t in r]
    rr = float(dot(r, r))
    for _ in range(CG_MAX_ITER):
        if rr <= threshold:
            break
        ap, lp = apply(p)
        alpha = rr / float(dot(p, ap))
        for xi, pi in zip(x, p):
            xi.add_(pi, alpha=alpha)
        if lp is not None:
            lx = [t * alpha for t in lp] if lx is None else [li.add_(t, alpha=alpha) for li, t in zip(lx, lp)]
        for ri, api in zip(r, ap):
            ri.add_(api, alpha=-alpha)
        rr_new = float(dot(r, r))
        beta = rr_new / rr
        for pi, ri in zip(p, r):
            pi.mul_(beta).add_(ri)
        rr = rr_new
    return x if factor is None else (x, lx)


def margin(z, y):
    """Section 2's margin quantities, overflow-free as fgn.NewMargin: loss, p_†, q, ∇_z s."""
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


class Step:
    """One method's state on one static batch; __call__ runs one step and returns the loss."""

    def __init__(self, method, h, y, classes):
        self.method, self.h, self.ht, self.y = method, h, h.t().contiguous(), y
        self.w = torch.zeros(DIM, classes)
        self.bias = torch.zeros(classes)
        self.feature_gram = torch.addmm(torch.ones(()), h, self.ht)  # h hᵀ + 1, once per batch
        self.warm = None
        if method == "Adam":
            self.w.requires_grad_(True)
            self.bias.requires_grad_(True)
            self.adam = torch.optim.Adam([self.w, self.bias], lr=ADAM_LR, foreach=True)

    @torch.no_grad()
    def __call__(self):
        z = torch.addmm(self.bias, self.h, self.w)
        if self.method == "Adam":
            return self.adam_step(z)
        if self.method == "SGN":
            return self.sgn_step(z)
        return self.fgn_step(z)

    def adam_step(self, z):
        b = z.shape[0]
        rows = torch.arange(b)
        lse = torch.logsumexp(z, 1)
        loss = (lse - z[rows, self.y]).mean()
        g = torch.exp_(z.sub_(lse[:, None]))  # softmax, in place
        g[rows, self.y] -= 1
        g.div_(b)
        self.w.grad, self.bias.grad = affine_vjp(self.ht, g)
        self.adam.step()
        return float(loss)

    def sgn_step(self, z):
        b = z.shape[0]
        rows = torch.arange(b)
        lse = torch.logsumexp(z, 1)
        loss = (lse - z[rows, self.y]).mean()
        probs = torch.exp(z - lse[:, None])
        residual = probs.clone()
        residual[rows, self.y] -= 1
        rhs = [-t / b for t in affine_vjp(self.ht, residual)]

        def ggn(v):
            pm = probs * affine_jvp(self.h, v)
            cov = pm.sub_(probs * pm.sum(1, keepdim=True)).div_(b)
            gv = affine_vjp(self.ht, cov)
            return [gi.add_(vi, alpha=LAMBDA) for gi, vi in zip(gv, v)]

        d = cg(ggn, rhs, self.warm)
        self.warm = d
        self.w.add_(d[0], alpha=STEP_SIZE)
        self.bias.add_(d[1], alpha=STEP_SIZE)
        return float(loss)

    def fgn_step(self, z):
        b = z.shape[0]
        loss, p_dagger, q, grad_s = margin(z, self.y)
        b_lambda = b * LAMBDA
        kept = q >= SATURATION_FLOOR
        sqrt_q = torch.where(kept, torch.sqrt(q), torch.zeros_like(q))
        r_tilde = torch.where(kept, p_dagger / torch.where(kept, sqrt_q, torch.ones_like(q)), torch.zeros_like(q))
        delta_r = torch.where(kept, torch.zeros_like(q), p_dagger / b_lambda)
        vjp = lambda a: affine_vjp(self.ht, a[:, None] * grad_s)  # Jᵀ a
        jvp = lambda v: (affine_jvp(self.h, v) * grad_s).sum(1)  # J β
        saturated = not bool(kept.all())  # the coupling of saturated rows is formed only if any
        if self.method == "FGN":
            gram = self.feature_gram * (grad_s @ grad_s.t())  # J Jᵀ, appendix F.2
            k = gram * sqrt_q[:, None] * sqrt_q[None, :]
            rhs = r_tilde - sqrt_q * (gram @ delta_r) if saturated else r_tilde
            op = lambda v: [torch.addmv(v[0], k, v[0], beta=b_lambda)]
            u = cg(op, [rhs], None)[0]
            d = vjp(delta_r + sqrt_q * u)  # −d: one back-projection
        else:
            t = vjp(delta_r) if saturated else None  # Jᵀ δ_R
            rhs = r_tilde - sqrt_q * jvp(t) if saturated else r_tilde
            factor = lambda v: vjp(sqrt_q * v[0])  # J̃ᵀ v
            op = lambda v, lv: [sqrt_q * jvp(lv) + b_lambda * v[0]]
            _, lu = cg(op, [rhs], None, factor)
            d = lu if t is None else [a + b for a, b in zip(lu, t)]  # −d = Jᵀ δ_R + J̃ᵀ u, from CG's VJPs
        self.w.sub_(d[0], alpha=STEP_SIZE)
        self.bias.sub_(d[1], alpha=STEP_SIZE)
        return float(loss)


def batch(size, classes):
    gen = torch.Generator().manual_seed(1)
    h = torch.randn(size, DIM, generator=gen)
    y = torch.randint(0, classes, (size,), generator=gen)
    return h, y


def time_torch(method, size, classes, steps):
    """Mean ms of `steps` steps after one warm-up step, at batch size `size`."""
    h, y = batch(size, classes)
    step = Step(method, h, y, classes)
    step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return 1e3 * (time.perf_counter() - start) / steps


def sgemm_ms(size, classes, repeats=10):
    """Best-of-repeats ms of one b×d×C float32 product with torch and with numpy."""
    h, _ = batch(size, classes)
    w = torch.randn(DIM, classes)
    out = {}
    for name, a, b in (("torch", h, w), ("numpy", h.numpy(), w.numpy())):
        a @ b
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
        out[name] = 1e3 * best
    return out


# ---------------------------------------------------------------- Go side


def go_env(root, **extra):
    """The environment for go commands: GOTOOLCHAIN is go.mod's toolchain line, which a go.env
    saying GOTOOLCHAIN=local would otherwise refuse to download."""
    with open(os.path.join(root, "go.mod")) as f:
        toolchain = [line.split()[1] for line in f if line.startswith("toolchain ")]
    if not toolchain:
        sys.exit("bench/peer.py: go.mod has no toolchain line")
    return dict(os.environ, GOTOOLCHAIN=toolchain[0], **extra)


def build_go_test(root, out):
    subprocess.run(["go", "test", "-c", "-o", out, "./experiments/train"], cwd=root,
                   env=go_env(root, GOEXPERIMENT="simd"), check=True)


GO_LINE = re.compile(r"^Benchmark\w+/\S+-\d+\s+\d+\s+(.*)$")


def go_benchmark(size, classes, method, scale):
    """The name of the Go benchmark of one cell: BenchmarkStepScale's with --scale, else BenchmarkStep's."""
    if scale:
        return f"BenchmarkStepScale/b={size}/C={classes}/{method}"
    return f"BenchmarkStep/C={classes}/{method}"


def time_go(binary, root, name, steps):
    """Runs the Go benchmark `name` (go_benchmark) for `steps` steps; returns its metrics."""
    pattern = "/".join(f"^{part}$" for part in name.split("/"))
    proc = subprocess.run([binary, "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", f"{steps}x"],
                          cwd=os.path.join(root, "experiments", "train"), capture_output=True, text=True, timeout=1800)
    for line in proc.stdout.splitlines():
        match = GO_LINE.match(line)
        if match:
            fields = match.group(1).split()
            return {unit: float(value) for value, unit in zip(fields[::2], fields[1::2])}
    sys.exit(f"bench/peer.py: {name} printed no result:\n{proc.stdout}\n{proc.stderr}")


# ---------------------------------------------------------------- report


def go_versions(root):
    env = go_env(root)
    version = subprocess.run(["go", "version"], cwd=root, env=env, capture_output=True, text=True,
                             check=True).stdout.split()[2]
    mods = subprocess.run(["go", "list", "-m", "github.com/gomlx/gomlx", "github.com/gomlx/compute"], cwd=root,
                          env=env, capture_output=True, text=True, check=True).stdout.split("\n")
    return version, ", ".join(m for m in mods if m)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        info = f.read()
    model = re.search(r"model name\s*:\s*(.*)", info).group(1)
    flags = re.search(r"flags\s*:\s*(.*)", info).group(1).split()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{model} ({isa}), {os.cpu_count()} logical CPUs"


def blas_description():
    libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not libs:
        sys.exit("bench/peer.py: torch/numpy load no BLAS that threadpoolctl recognises; "
                 "install OpenBLAS: apt-get install libopenblas0-pthread")
    desc = ", ".join(f"{i['internal_api']} {i.get('version')} ({i.get('architecture')} kernel)" for i in libs)
    if any(i["internal_api"] != "openblas" for i in libs):
        sys.exit(f"bench/peer.py: expected OpenBLAS, found {desc}; apt-get install libopenblas0-pthread")
    unset = os.environ.get("FGN_PEER_UNSET_OPENBLAS")
    if unset:
        desc += f"; {unset} unset for this run"
    return desc


def ratio(a, b):
    return f"{a / b:.2f}"


def floor_products(method, size):
    """The b×d×C products a step cannot avoid, in units of one (the sgemm floor's multiple): Adam 2
    (logits, hᵀ(p−y)); FGN 2 + b/d (logits, one back-projection, the b×b×C margin Gram); FGN
    matrix-free 11 (logits; 2 per CG iteration, whose VJPs also form the back-projection); SGN 14
    (logits; 2 for the warm start's residual; 2 per CG iteration; the gradient)."""
    return {"Adam": 2, "FGN": 2 + size / DIM, "FGNMatrixFree": 1 + 2 * CG_MAX_ITER,
            "SGN": 4 + 2 * CG_MAX_ITER}[method]


def report(rows, sgemm, loads, machine, started):
    go_version, modules = machine["go"]
    lines = [
        SECTION_BEGIN,
        "## Step time against a PyTorch CPU peer",
        "",
        "Written by `bench/peer.py` (one run; regenerate with that command). One optimiser step of a",
        f"linear softmax head, b={BATCH}, d={DIM}, float32, {THREADS} threads, hyper-parameters of Figure 1(a):",
        f"Adam learning rate {ADAM_LR:g}; SGN/FGN learning rate α = {STEP_SIZE:g}, damping λ = {LAMBDA:g}, CG ≤ {CG_MAX_ITER} iterations,",
        f"tolerance {CG_TOL:g}. Go: `BenchmarkStep` (experiments/train/step_bench_test.go: the training loop's step,",
        "as Figure 1(a) times it), pure-Go backend, `GOEXPERIMENT=simd`;",
        "PyTorch: `bench/peer.py` (closed-form head products; feature Gram and hᵀ once per batch, as in Go).",
        "The Go steps also check that the step is finite and skip it otherwise, as the training loop",
        "must; the PyTorch steps do not.",
        "ms per step are means over the timed steps after a warm-up step; each Go cell and its PyTorch",
        "cell ran back to back. The sgemm floor is the faster of torch and numpy for one b×d×C product",
        "(best of 10, before and after the steps) times the products a step cannot avoid: Adam 2",
        "(logits, hᵀ(p−y)); FGN 2.25 (logits, one back-projection, the b×b×C margin Gram); FGN",
        f"matrix-free 11 (logits; 2 per CG iteration × {CG_MAX_ITER}, whose VJPs also form the back-projection; the saturated-row",
        "coupling is skipped, as in Go, when no row is saturated, as here); SGN 14 (logits; 2 for the",
        f"warm start's residual; 2 per CG iteration × {CG_MAX_ITER}; the gradient).",
        "",
        f"- date: {started:%Y-%m-%d}; 1-minute load average {loads[0]:.2f} at start, {loads[1]:.2f} at end",
        f"- machine: {machine['cpu']}; {platform.system()} {platform.release()}",
        f"- Go: {go_version}, {modules}, backend: pure Go (default), GOEXPERIMENT=simd",
        f"- PyTorch {torch.__version__}, NumPy {np.__version__}, BLAS: {machine['blas']}",
        "",
        "| C | method | Go ms | PyTorch ms | Go / PyTorch | sgemm floor ms | Go / floor | Go live peak MiB | live peak / (params+batch) | Go heap peak MiB | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        floor = floor_products(r["method"], BATCH) * min(sgemm[(BATCH, r["classes"])].values())
        lines.append(
            f"| {r['classes']} | {r['method']} | {r['go']['ms/step']:.1f} | {r['torch']:.1f} | "
            f"{ratio(r['go']['ms/step'], r['torch'])} | {floor:.1f} | {ratio(r['go']['ms/step'], floor)} | "
            f"{r['go']['MiB-live-peak']:.0f} | {r['go']['live-peak/(params+batch)']:.1f} | "
            f"{r['go']['MiB-heap-peak']:.0f} | {r['load']:.2f} |")
    by = {(r["classes"], r["method"]): r["go"]["ms/step"] for r in rows}
    lines += ["", "Ratios between Go steps (same run):", ""]
    for c in CLASSES:
        lines.append(f"- C={c}: FGN / Adam = {ratio(by[(c, 'FGN')], by[(c, 'Adam')])}, "
                     f"FGN / SGN = {ratio(by[(c, 'FGN')], by[(c, 'SGN')])}")
    lines += ["", "sgemm (one b×d×C float32 product, best of 10 before and after the steps):", ""]
    for c in CLASSES:
        flops, ms = 2 * BATCH * DIM * c, sgemm[(BATCH, c)]
        lines.append(f"- C={c}: torch {ms['torch']:.1f} ms ({flops / ms['torch'] / 1e6:.0f} GFLOP/s), "
                     f"numpy {ms['numpy']:.1f} ms ({flops / ms['numpy'] / 1e6:.0f} GFLOP/s)")
    lines += ["", "Memory, above the Go heap before the benchmark allocated anything (parameters + batch is",
              "4·(d·C + C + b·d + b) bytes): the live peak is the largest heap read right after each of",
              "back-to-back collections over 3 untimed steps, what a step holds (parameters, batch, layouts,",
              "optimiser state, temporaries, buffers the backend pooled since the collection before); the heap",
              "peak is the largest heap sampled every 200 µs during the timed steps under the default collector",
              "(GOGC=100), which lets garbage grow to about the live heap before collecting it. By construction",
              "Adam holds W, two moments and the gradient (≥ 4 d×C) and SGN W, its warm start and the CG",
              "vectors (≥ 6 d×C), in any implementation; FGN holds W and one d×C direction.", SECTION_END]
    return "\n".join(lines) + "\n"


SCALE_BEGIN = "<!-- bench/peer.py --scale: begin -->"
SCALE_END = "<!-- bench/peer.py --scale: end -->"
SCALE_CSV = os.path.join("bench", "step_scale.csv")
SCALE_FIGURE = os.path.join("bench", "step_scale")


def scale_steps(size, classes):
    """Timed steps of a scale cell: 12 at b=512, C=4096, in inverse proportion to b·C elsewhere,
    between 3 and 40."""
    return max(3, min(40, round(12 * 512 * 4096 / (size * classes))))


def scale_report(rows, sgemm, loads, machine, started, steps):
    """The scale section of BENCHMARKS.md; steps says how many steps each cell timed."""
    go_version, modules = machine["go"]
    lines = [
        SCALE_BEGIN,
        "## Step time as the work grows: classes and batch",
        "",
        "Written by `bench/peer.py --scale` (one run; regenerate with that command), which also writes",
        f"`{SCALE_CSV}` and draws it (`go run ./bench/scalefig`). The step of the peer table above at the",
        "shapes of `BenchmarkStepScale` (experiments/train/step_bench_test.go): C ∈ {256, 4096, 32768} at",
        f"b=512 and b ∈ {{128, 512, 2048}} at C=4096; d={DIM}, float32, {THREADS} threads, the same methods,",
        f"hyper-parameters and PyTorch peer. Timed steps per cell: {steps}. The sgemm floor is the faster of torch and numpy",
        "for one b×d×C product (best of 10, before and after the steps) times the products a step cannot",
        "avoid: Adam 2, FGN 2 + b/d (the b×b×C margin Gram is b/d of a product), FGN (matrix-free) 11,",
        "SGN 14. Memory columns as in the peer table; parameters + batch is 4·(d·C + C + b·d + b) bytes;",
        "the estimate is what `train.EstimateMemory` (which `fgn train` and `train.Run` check against the",
        "machine's available memory) counts of what the benchmark holds.",
        "",
        f"- date: {started:%Y-%m-%d}; 1-minute load average {loads[0]:.2f} at start, {loads[1]:.2f} at end",
        f"- machine: {machine['cpu']}; {platform.system()} {platform.release()}",
        f"- Go: {go_version}, {modules}, backend: pure Go (default), GOEXPERIMENT=simd",
        f"- PyTorch {torch.__version__}, NumPy {np.__version__}, BLAS: {machine['blas']}",
        "",
        f"![ms per step against C and against b]({SCALE_FIGURE.replace(os.sep, '/')}.png)",
        "",
        "| b | C | method | Go ms | PyTorch ms | Go / PyTorch | sgemm floor ms | Go / floor | Go live peak MiB | live peak / (params+batch) | live peak / estimate | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        floor = floor_products(r["method"], r["batch"]) * min(sgemm[(r["batch"], r["classes"])].values())
        lines.append(
            f"| {r['batch']} | {r['classes']} | {METHOD_LABELS[r['method']]} | {r['go']['ms/step']:.1f} | "
            f"{r['torch']:.1f} | {ratio(r['go']['ms/step'], r['torch'])} | {floor:.1f} | "
            f"{ratio(r['go']['ms/step'], floor)} | {r['go']['MiB-live-peak']:.0f} | "
            f"{r['go']['live-peak/(params+batch)']:.1f} | {r['go']['live-peak/estimate']:.2f} | {r['load']:.2f} |")
    by = {(r["batch"], r["classes"], r["method"]): r["go"]["ms/step"] for r in rows}
    lines += ["", "FGN (closed-form Gram) against the other Go steps (same run):", ""]
    for b, c in SCALE_SHAPES:
        lines.append(f"- b={b}, C={c}: FGN / Adam = {ratio(by[(b, c, 'FGN')], by[(b, c, 'Adam')])}, "
                     f"FGN / SGN = {ratio(by[(b, c, 'FGN')], by[(b, c, 'SGN')])}")
    lines += ["", "sgemm (one b×d×C float32 product, best of 10 before and after the steps):", ""]
    for b, c in SCALE_SHAPES:
        flops, ms = 2 * b * DIM * c, sgemm[(b, c)]
        lines.append(f"- b={b}, C={c}: torch {ms['torch']:.1f} ms ({flops / ms['torch'] / 1e6:.0f} GFLOP/s), "
                     f"numpy {ms['numpy']:.1f} ms ({flops / ms['numpy'] / 1e6:.0f} GFLOP/s)")
    lines.append(SCALE_END)
    return "\n".join(lines) + "\n"


def scale_csv(rows, sgemm, loads, machine, started):
    """The scale run as a CSV table in experiments/report's layout (provenance comments, header,
    rows), with the project's method names, for bench/scalefig."""
    go_version, modules = machine["go"]
    out = [f"# date: {started:%Y-%m-%d}",
           f"# machine: {machine['cpu']}",
           f"# go: {go_version}, {modules}, pure Go backend, GOEXPERIMENT=simd",
           f"# peer: PyTorch {torch.__version__}, {THREADS} threads, BLAS {machine['blas']}",
           f"# load: {loads[0]:.2f} at start, {loads[1]:.2f} at end",
           "# command: bench/peer.py --scale",
           "batch,classes,method,go_ms,torch_ms,sgemm_ms,floor_ms,go_live_peak_mib,live_peak_ratio,load"]
    for r in rows:
        one = min(sgemm[(r["batch"], r["classes"])].values())
        out.append(",".join(str(v) for v in (
            r["batch"], r["classes"], METHOD_IDS[r["method"]], r["go"]["ms/step"], round(r["torch"], 3),
            round(one, 3), round(floor_products(r["method"], r["batch"]) * one, 3), r["go"]["MiB-live-peak"],
            r["go"]["live-peak/(params+batch)"], r["load"])))
    return "\n".join(out) + "\n"


def write_section(path, section, begin=SECTION_BEGIN, end=SECTION_END):
    """Replaces the text between begin and end in path by section (which holds both markers), or
    appends section."""
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + section.rstrip("\n") + rest.split(end, 1)[1]
    else:
        text = (text.rstrip("\n") + "\n\n" if text else "# Benchmarks\n\n") + section
    write_file(path, text)


def write_file(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def measure(binary, root, shapes, steps_of, scale):
    """Runs every method at every (b, C) of shapes, Go then PyTorch; returns the rows and the
    sgemm times, measured before and after the steps (the faster kept)."""
    sgemm = {shape: sgemm_ms(*shape) for shape in shapes}
    rows = []
    for b, c in shapes:
        steps = steps_of(b, c)
        for method in METHODS:
            load = load_average()
            go = time_go(binary, root, go_benchmark(b, c, method, scale), steps)
            peer = time_torch(method, b, c, steps)
            rows.append({"batch": b, "classes": c, "method": method, "go": go, "torch": peer, "load": load})
            print(f"b={b} C={c} {method}: Go {go['ms/step']:.1f} ms, PyTorch {peer:.1f} ms (load {load:.2f})",
                  flush=True)
    for shape in shapes:
        sgemm[shape] = {lib: min(ms, again) for (lib, ms), again in zip(sgemm[shape].items(), sgemm_ms(*shape).values())}
    return rows, sgemm


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps-small", type=int, default=40, help="timed steps at C=256")
    parser.add_argument("--steps-large", type=int, default=12, help="timed steps at C=4096")
    parser.add_argument("--scale", action="store_true",
                        help="run BenchmarkStepScale's shapes instead and write the scale section, CSV and figure")
    parser.add_argument("--scale-steps", type=int, default=0,
                        help="with --scale, timed steps of every cell (default: scale_steps, 3 to 40 by the shape)")
    parser.add_argument("--out", default="BENCHMARKS.md", help="file whose peer (or scale) section is rewritten")
    args = parser.parse_args()
    if args.steps_small < 1 or args.steps_large < 1 or args.scale_steps < 0:
        sys.exit("bench/peer.py: --steps-small and --steps-large must be ≥ 1, --scale-steps ≥ 0")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    torch.set_num_threads(THREADS)
    started = datetime.datetime.now(datetime.timezone.utc)
    machine = {"cpu": cpu_model(), "blas": blas_description(), "go": go_versions(root)}
    load_start = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "train.test")
        build_go_test(root, binary)
        if args.scale:
            steps_of = (lambda b, c: args.scale_steps) if args.scale_steps else scale_steps
            rows, sgemm = measure(binary, root, SCALE_SHAPES, steps_of, True)
        else:
            rows, sgemm = measure(binary, root, [(BATCH, c) for c in CLASSES],
                                  lambda b, c: args.steps_small if c < 1024 else args.steps_large, False)
    loads = (load_start, load_average())
    if args.scale:
        write_file(os.path.join(root, SCALE_CSV), scale_csv(rows, sgemm, loads, machine, started))
        subprocess.run(["go", "run", "./bench/scalefig", "-csv", SCALE_CSV, "-out", SCALE_FIGURE], cwd=root,
                       env=go_env(root), check=True)
        steps = (f"{args.scale_steps} (--scale-steps)" if args.scale_steps else
                 "12 at b=512, C=4096, in inverse proportion to b·C elsewhere, between 3 and 40")
        section = scale_report(rows, sgemm, loads, machine, started, steps)
        write_section(os.path.join(root, args.out), section, SCALE_BEGIN, SCALE_END)
    else:
        section = report(rows, sgemm, loads, machine, started)
        write_section(os.path.join(root, args.out), section)
    print(section)


if __name__ == "__main__":
    main()
