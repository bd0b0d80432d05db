#!/usr/bin/python3
"""Side-by-side step benchmark: the Go BenchmarkStep against a PyTorch CPU peer.

One command (from the repository root):

    bench/peer.py            # or: /usr/bin/python3 bench/peer.py [--steps-small N] [--steps-large N]
    bench/peer.py --scale    # the growth axes: BenchmarkStepScale's shapes, table and figure
    bench/peer.py --zoo      # the model zoo's cost benchmarks, the CNN beside its PyTorch peer
    bench/peer.py --conv     # convolutions direct and lowered to matrix products (jvp)
    bench/peer.py --layout   # small products' rhs layouts on the small kernels (jvp)

It builds the experiments/train test binary in the SIMD build (GOEXPERIMENT=simd) with go.mod's
toolchain (GOTOOLCHAIN set from its toolchain line, as .ci/toolchain.sh does), then for every
shape and every method runs the Go benchmark (BenchmarkStep/C=<C>/<method> at b=512; with
--scale, BenchmarkStepScale/b=<b>/C=<C>/<method>) and the same step in PyTorch (float32,
2 threads), alternating the two so that both see the same load, measures the sgemm roofline
(one b×d×C product) with torch and numpy, and rewrites the peer section of BENCHMARKS.md (with
--scale, its scale section) with the ratio table, the machine, versions, date and load
averages. --scale also writes the measurements to bench/step_scale.csv and draws them with
`go run ./bench/scalefig` (bench/step_scale.{svg,png,pdf}, the project's plot style).

With --zoo it builds experiments/zoo's test binary instead and runs, --runs times over, the model
zoo's cost benchmarks (BenchmarkModelZoo, BenchmarkZooFixedCG and BenchmarkZooProducts, for every
zoo model and for the CNN lowered to matrix products by jvp.LowerConvolutions) alternating with the
same CNN's products and steps in PyTorch (bench/cnn_peer.py), and rewrites BENCHMARKS.md's zoo cost
section with the medians, their ranges and the sgemm-equivalent floor of the CNN's products.
With --conv it builds jvp's test binary and runs BenchmarkConvLowering --runs times over, and
rewrites the section on convolutions lowered to matrix products; with --layout, the same with
BenchmarkSmallProductLayout and the section on small products' layouts. Every mode with --avx2
runs the Go benchmarks (and the peer) on AVX2 kernels and writes a section of its own.
bench/regenerate.sh runs --conv, --layout, --zoo and --scale in turn, each on both vector widths.

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
# --avx2: the PyTorch peer's kernels limited to AVX2 (OpenBLAS's Haswell kernels, oneDNN's and
# ATen's AVX2 code), set before torch loads them; the Go benchmarks get GO_AVX2_ENV.
PEER_AVX2_ENV = {"OPENBLAS_CORETYPE": "Haswell", "ONEDNN_MAX_CPU_ISA": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2",
                 "ATEN_CPU_CAPABILITY": "avx2"}
GO_AVX2_ENV = {"GODEBUG": "cpu.avx512f=off"}  # Go's internal/cpu, hence the pure-Go backend, sees no AVX-512
AVX2 = "--avx2" in sys.argv
if AVX2 and os.environ.get("FGN_PEER_AVX2") != "1":
    env = {k: v for k, v in os.environ.items() if k not in OPENBLAS_VARS}
    env.update(PEER_AVX2_ENV, FGN_PEER_AVX2="1")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)
if not AVX2 and any(v in os.environ for v in OPENBLAS_VARS):
    env = {k: v for k, v in os.environ.items() if k not in OPENBLAS_VARS}
    env["FGN_PEER_UNSET_OPENBLAS"] = ",".join(v for v in OPENBLAS_VARS if v in os.environ)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from threadpoolctl import threadpool_info  # noqa: E402

import cnn_peer  # noqa: E402  (bench/cnn_peer.py, beside this file)

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
def marker(mode, end=False):
    """The marker that begins (or ends) the section of BENCHMARKS.md that mode ("", "--scale",
    "--zoo", "--conv" or "--layout") writes, with --avx2 for the run on AVX2 kernels."""
    words = " ".join(w for w in ("bench/peer.py", mode, "--avx2" if AVX2 else "") if w)
    return f"<!-- {words}: {'end' if end else 'begin'} -->"


SECTION_BEGIN, SECTION_END = marker(""), marker("", True)


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
        loss, p_dagger, q, grad_s = cnn_peer.margin(z, self.y)
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


def build_go_test(root, out, package="./experiments/train"):
    subprocess.run(["go", "test", "-c", "-o", out, package], cwd=root,
                   env=go_env(root, GOEXPERIMENT="simd"), check=True)


GO_LINE = re.compile(r"^Benchmark\w+/\S+-\d+\s+\d+\s+(.*)$")


def go_benchmark(size, classes, method, scale):
    """The name of the Go benchmark of one cell: BenchmarkStepScale's with --scale, else BenchmarkStep's."""
    if scale:
        return f"BenchmarkStepScale/b={size}/C={classes}/{method}"
    return f"BenchmarkStep/C={classes}/{method}"


def time_go(binary, root, name, steps, package=os.path.join("experiments", "train")):
    """Runs the Go benchmark `name` (go_benchmark) for `steps` steps; returns its metrics."""
    return time_go_all(binary, root, name, steps, package)[name.split("/", 1)[1]]


def time_go_all(binary, root, name, steps, package):
    """Runs the Go benchmarks matching `name` (each part matched whole) for `steps` steps each;
    returns the metrics of each sub-benchmark by its name without the top level's."""
    pattern = "/".join(f"^{part}$" for part in name.split("/"))
    proc = subprocess.run([binary, "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", f"{steps}x"],
                          cwd=os.path.join(root, package), capture_output=True, text=True, timeout=1800,
                          env=dict(os.environ, **GO_AVX2_ENV) if AVX2 else None)
    out = {}
    for line in proc.stdout.splitlines():
        match = GO_LINE.match(line)
        if match:
            fields = match.group(1).split()
            sub = line.split()[0].split("/", 1)[1].rsplit("-", 1)[0]
            out[sub] = {unit: float(value) for value, unit in zip(fields[::2], fields[1::2])}
    if not out:
        sys.exit(f"bench/peer.py: {name} printed no result:\n{proc.stdout}\n{proc.stderr}")
    return out


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
    vector = sorted(f for f in flags if f == "avx2" or f.startswith("avx512"))
    if vector:
        isa += ": " + " ".join(vector)
    kernels = ""
    if AVX2:
        kernels = (", run on AVX2 kernels (Go: " + " ".join(f"{k}={v}" for k, v in GO_AVX2_ENV.items()) +
                   "; PyTorch: " + ", ".join(f"{k}={v}" for k, v in PEER_AVX2_ENV.items()) + ")")
    return f"{model} ({isa}){kernels}, {os.cpu_count()} logical CPUs"


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


def shared_machine(loads):
    """A sentence for a report whose 1-minute loads (at start and end) say other jobs shared the
    machine, else an empty list."""
    if max(loads) <= THREADS + 0.5:
        return []
    return ["", f"The machine was shared with other jobs (1-minute load up to {max(loads):.1f} on {os.cpu_count()} "
            "logical CPUs): these timings are not a quiet machine's, PyTorch's two OpenMP threads, which wait "
            "for each other by spinning, least of all; regenerate them in a quiet window."]


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
              "peak is the largest heap sampled every 200 µs over 3 other untimed steps under the default collector",
              "(GOGC=100), which lets garbage grow to about the live heap before collecting it. By construction",
              "Adam holds W, two moments and the gradient (≥ 4 d×C) and SGN W, its warm start and the CG",
              "vectors (≥ 6 d×C), in any implementation; FGN holds W and one d×C direction.", SECTION_END]
    return "\n".join(lines) + "\n"


SCALE_BEGIN, SCALE_END = marker("--scale"), marker("--scale", True)
SCALE_CSV = os.path.join("bench", "step_scale.csv")
SCALE_FIGURE = os.path.join("bench", "step_scale")


def scale_steps(size, classes):
    """Timed steps of a scale cell: 12 at b=512, C=4096, in inverse proportion to b·C elsewhere,
    between 3 and 40."""
    return max(3, min(40, round(12 * 512 * 4096 / (size * classes))))


def scale_report(rows, sgemm, loads, machine, started, steps, runs):
    """The scale section of BENCHMARKS.md; steps says how many steps each cell timed in each of runs
    runs."""
    go_version, modules = machine["go"]
    title = "## Step time as the work grows: classes and batch" + (", AVX2 kernels" if AVX2 else "")
    lines = [
        SCALE_BEGIN,
        title,
        "",
        f"Written by `bench/peer.py --scale{' --avx2' if AVX2 else ''}` (regenerate with that command)"
        + (f", which also writes `{SCALE_CSV}` and draws it (`go run ./bench/scalefig`)." if not AVX2 else "."),
        "The step of the peer table above at the",
        "shapes of `BenchmarkStepScale` (experiments/train/step_bench_test.go): C ∈ {256, 4096, 32768} at",
        f"b=512 and b ∈ {{128, 512, 2048}} at C=4096; d={DIM}, float32, {THREADS} threads, the same methods,",
        "hyper-parameters and PyTorch peer. Every cell ran "
        + ("once," if runs == 1 else f"{runs} times, one run through all the cells after"),
        ("" if runs == 1 else "another, ")
        + f"each Go cell and its PyTorch cell back to back; timed steps per cell and run: {steps}.",
        "Times are medians over the runs; a spread is (max − min) / median over them. Each Go run times",
        "its steps after 3 untimed ones and samples memory over others; faults/step are the page faults",
        "of its timed steps (first touches of memory the backend allocated), median over the runs.",
        "The sgemm floor is the faster of torch and numpy",
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
    ]
    if shared_machine(loads):
        lines += shared_machine(loads)[1:] + [""]
    if not AVX2:
        lines += [f"![ms per step against C and against b]({SCALE_FIGURE.replace(os.sep, '/')}.png)", ""]
    lines += [
        "| b | C | method | Go ms | Go spread | PyTorch ms | PyTorch spread | Go / PyTorch | sgemm floor ms | Go / floor | faults/step | Go live peak MiB | live peak / (params+batch) | live peak / estimate | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        floor = floor_products(r["method"], r["batch"]) * min(sgemm[(r["batch"], r["classes"])].values())
        go_ms = [g["ms/step"] for g in r["go_runs"]]
        lines.append(
            f"| {r['batch']} | {r['classes']} | {METHOD_LABELS[r['method']]} | {r['go']['ms/step']:.1f} | "
            f"{spread(go_ms):.0%} | {r['torch']:.1f} | {spread(r['torch_runs']):.0%} | "
            f"{ratio(r['go']['ms/step'], r['torch'])} | {floor:.1f} | "
            f"{ratio(r['go']['ms/step'], floor)} | {r['go'].get('faults/step', float('nan')):.0f} | "
            f"{r['go']['MiB-live-peak']:.0f} | {r['go']['live-peak/(params+batch)']:.1f} | "
            f"{r['go']['live-peak/estimate']:.2f} | {r['load']:.2f} |")
    by = {(r["batch"], r["classes"], r["method"]): r["go"]["ms/step"] for r in rows}
    lines += scale_targets(rows, sgemm, runs)
    lines += ["", "FGN (closed-form Gram) against the other Go steps (same runs, medians):", ""]
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


def scale_targets(rows, sgemm, runs):
    """The scale table's targets, from its medians, at the two shapes where the work grows and over
    every shape; the run-to-run spread only when there are several runs."""
    def cell(r, what):
        floor = floor_products(r["method"], r["batch"]) * min(sgemm[(r["batch"], r["classes"])].values())
        return {"peer": r["go"]["ms/step"] / r["torch"], "floor": r["go"]["ms/step"] / floor,
                "memory": r["go"]["live-peak/(params+batch)"],
                "spread": max(spread([g["ms/step"] for g in r["go_runs"]]), spread(r["torch_runs"])),
                "ms": r["go"]["ms/step"]}[what]

    def at(shape, method=None):
        return [r for r in rows if (r["batch"], r["classes"]) == shape and method in (None, r["method"])]

    def show(values, percent):
        f = (lambda v: f"{v:.0%}") if percent else (lambda v: f"{v:.2f}")
        return "-" if not values else f(values[0]) if len(values) == 1 else f"{f(min(values))}-{f(max(values))}"

    big, wide = (512, 32768), (2048, 4096)
    shapes = sorted({(r["batch"], r["classes"]) for r in rows})
    others = [shape for shape in shapes if shape not in (big, wide)]
    # (target, the values it bounds at one shape, bound, whether it holds at every shape or at the
    # two where the work grows only, as percentages)
    targets = [
        ("every method ≤ 1.0× its PyTorch counterpart", lambda shape: [cell(r, "peer") for r in at(shape)], 1.0, True, False),
        ("run-to-run spread ≤ 20 %, Go and PyTorch" + ("" if runs > 1 else " (one run: not measured)"),
         lambda shape: [cell(r, "spread") for r in at(shape)] if runs > 1 else [], 0.2, True, True),
        ("FGN (closed-form Gram) ≤ 1.5× its sgemm floor", lambda shape: [cell(r, "floor") for r in at(shape, "FGN")], 1.5, False, False),
        ("Adam ≤ 1.5× its sgemm floor", lambda shape: [cell(r, "floor") for r in at(shape, "Adam")], 1.5, False, False),
        ("FGN (closed-form Gram) live peak ≤ 3× parameters + batch",
         lambda shape: [cell(r, "memory") for r in at(shape, "FGN")], 3.0, False, False),
        ("FGN (closed-form Gram) ≤ 1.1× Adam at C=32768",
         lambda shape: [cell(r, "ms") / cell(a, "ms") for r in at(shape, "FGN") for a in at(shape, "Adam")] if shape == big else [],
         1.1, False, False),
    ]
    lines = ["", "The targets, from the medians above, at the two shapes where the work grows and over the table's",
             "other shapes (the step-time and spread targets hold at every shape; the others where the work grows):", "",
             "| target | b=512, C=32768 | b=2048, C=4096 | other shapes | met |", "|---|---|---|---|---|"]
    for name, values, bound, everywhere, percent in targets:
        scope = shapes if everywhere else [big, wide]
        bounded = [v for shape in scope for v in values(shape)]
        other = [v for shape in others for v in values(shape)]
        verdict = "-" if not bounded else "yes" if max(bounded) <= bound else "no"
        lines.append(f"| {name} | {show(values(big), percent)} | {show(values(wide), percent)} | "
                     f"{show(other, percent) if everywhere else '-'} | {verdict} |")
    return lines


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


ZOO_BEGIN, ZOO_END = marker("--zoo"), marker("--zoo", True)
ZOO_PACKAGE = os.path.join("experiments", "zoo")
# The zoo's models (experiments/zoo's Models) and the CNN lowered to matrix products (its
# benchModels), with the timed steps or calls of each cell.
ZOO_MODELS = ("relu-mlp", "tanh-mlp", "cnn", "cnn-lowered")
ZOO_CALLS = {"relu-mlp": 200, "tanh-mlp": 200, "cnn": 20, "cnn-lowered": 20}
CNN_MODELS = ("cnn", "cnn-lowered")


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def measure_zoo(binary, root, runs):
    """Runs, runs times over, every zoo cost benchmark of every model (one process per benchmark
    and model), alternating with the PyTorch CNN's products and steps after each CNN model; returns
    the Go metrics {(benchmark, model, sub): [run values]} and the PyTorch times {cell: [ms]}."""
    go, peer = {}, {}
    for run in range(runs):
        for model in ZOO_MODELS:
            calls = ZOO_CALLS[model]
            for bench in ("BenchmarkModelZoo", "BenchmarkZooFixedCG", "BenchmarkZooProducts"):
                load = load_average()
                for name, metrics in time_go_all(binary, root, f"{bench}/{model}/.*", calls, ZOO_PACKAGE).items():
                    metrics["load"] = load
                    go.setdefault((bench,) + tuple(name.split("/")), []).append(metrics)
            if model in CNN_MODELS:
                products = cnn_peer.products(calls)
                for cell, ms in products.items():
                    peer.setdefault(cell, []).append(ms)
                jvp = "dual" if products["forward+JVP (dual numbers)"] < products["forward+JVP"] else "tangent"
                for method in ("Adam", "FGN"):
                    peer.setdefault(method, []).append(cnn_peer.step(method, calls, jvp))
                peer.setdefault("FGN JVP", []).append(jvp)
            print(f"run {run + 1}/{runs}: {model} done (load {load_average():.2f})", flush=True)
    return go, peer


def zoo_report(go, peer, floors, runs, loads, machine, started):
    """The zoo cost section of BENCHMARKS.md."""
    go_version, modules = machine["go"]

    def cell(bench, model, sub, unit="ms/step"):
        return [m[unit] for m in go[(bench, model, sub)]]

    def fmt(values, digits):
        m, lo, hi = median(values), min(values), max(values)
        return f"{m:.{digits}f}" if runs == 1 else f"{m:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"

    def digits(model):
        return 2 if model in CNN_MODELS else 3

    all_loads = [m["load"] for ms in go.values() for m in ms]
    lines = [
        ZOO_BEGIN,
        "## The model zoo: cost per step" + (" (AVX2 kernels)" if AVX2 else ""),
        "",
        "Written by `bench/peer.py --zoo" + (" --avx2" if AVX2 else "") + "` (regenerate with that command): experiments/zoo's cost",
        "benchmarks and the CNN's PyTorch peer (bench/cnn_peer.py), run one after another "
        + ("once" if runs == 1 else f"and repeated {runs} times") + "; each cell is the median over the",
        "runs (with the range when there are several).",
        "`BenchmarkModelZoo` times a training step through `train.Trainer.TrainStep` on 128 images with",
        "each optimizer at its defaults (Adam: GoMLX's), each timed step, here and in `BenchmarkZooFixedCG`",
        "and the PyTorch peer, from the state that ten steps on those images reached (parameters and",
        "optimizer state restored untimed); the live peak is the Go heap held by a step (as",
        "`BenchmarkStep`'s), above the heap before the trainer was built. `BenchmarkZooProducts` times",
        "the logits alone and the logits with one JVP (forward mode, `fgn.Linearize`) or one VJP (GoMLX's",
        "reverse mode); a product's cost is (t(forward + product) − t(forward)) / t(forward).",
        "`BenchmarkZooFixedCG` computes every one of the N_CG = 5 iterations of CG (unrolled), so that",
        "FGN and SGN make the same products, those of the paper's cost accounting: the logits,",
        "N_CG·(JVP + VJP) and one VJP, and at the defaults the noise estimate's probe (a VJP), J_z d for",
        "the step length and Levenberg-Marquardt's model (a JVP) and the logits at the trial point.",
        "`cnn` is the zoo's CNN as written (GoMLX's `layers.Convolution`): its forward pass and Adam's",
        "reverse mode run the pure-Go backend's direct convolution, while `fgn.Linearize`",
        "(`jvp.Linearize`) computes the convolutions of its products and of the trial logits as matrix",
        "products of their patches (its convolution pass); `cnn-lowered` is the same model with its",
        "logits returned through `jvp.LowerConvolutions`, the opt-in that lowers the model's own forward",
        "pass, and hence its reverse mode, too.",
        f"Timed steps or calls per cell: {', '.join(f'{m} {ZOO_CALLS[m]}' for m in ZOO_MODELS)}.",
        "",
        f"- date: {started:%Y-%m-%d}; 1-minute load average {loads[0]:.2f} at start, {loads[1]:.2f} at end, "
        f"{min(all_loads):.2f}-{max(all_loads):.2f} at the Go cells (the benchmarks' own threads included)",
        f"- machine: {machine['cpu']}; {platform.system()} {platform.release()}",
        f"- Go: {go_version}, {modules}, backend: pure Go (default), GOEXPERIMENT=simd",
        f"- PyTorch {torch.__version__}, {THREADS} threads, NumPy {np.__version__}, BLAS: {machine['blas']}",
    ]
    lines += shared_machine(loads) + [
        "",
        "| model | Adam ms/step | SGN ms/step | FGN ms/step | FGN / Adam | FGN / SGN | JVP / forward | VJP / forward | live peak MiB (Adam, SGN, FGN) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for model in ZOO_MODELS:
        d = digits(model)
        adam, sgn, fgn = (median(cell("BenchmarkModelZoo", model, m)) for m in ("Adam", "SGN", "FGN"))
        jvp = median(cell("BenchmarkZooProducts", model, "forward+JVP", "JVP/forward"))
        vjp = median(cell("BenchmarkZooProducts", model, "forward+VJP", "VJP/forward"))
        peaks = ", ".join(f"{median(cell('BenchmarkModelZoo', model, m, 'MiB-live-peak')):.1f}" for m in ("Adam", "SGN", "FGN"))
        lines.append(f"| {model} | {fmt(cell('BenchmarkModelZoo', model, 'Adam'), d)} | "
                     f"{fmt(cell('BenchmarkModelZoo', model, 'SGN'), d)} | {fmt(cell('BenchmarkModelZoo', model, 'FGN'), d)} | "
                     f"{ratio(fgn, adam)} | {ratio(fgn, sgn)} | {jvp:.2f} | {vjp:.2f} | {peaks} |")
    lines += [
        "",
        "With CG's default tolerance each method stops when its residual test passes, after as many",
        "iterations as its system needs on that step; with every iteration computed the two make the",
        "same products:",
        "",
        "| model | SGN ms/step | FGN ms/step | FGN / SGN |",
        "|---|---|---|---|",
    ]
    for model in ZOO_MODELS:
        d = digits(model)
        sgn, fgn = cell("BenchmarkZooFixedCG", model, "SGN"), cell("BenchmarkZooFixedCG", model, "FGN")
        lines.append(f"| {model} | {fmt(sgn, d)} | {fmt(fgn, d)} | {ratio(median(fgn), median(sgn))} |")
    # The CNN against PyTorch.
    rows = [("forward", "BenchmarkZooProducts", "forward", "ms/call", "forward"),
            ("forward + JVP", "BenchmarkZooProducts", "forward+JVP", "ms/call", "forward+JVP"),
            ("forward + VJP", "BenchmarkZooProducts", "forward+VJP", "ms/call", "forward+VJP"),
            ("Adam step", "BenchmarkModelZoo", "Adam", "ms/step", "Adam"),
            ("FGN step, N_CG = 5", "BenchmarkZooFixedCG", "FGN", "ms/step", "FGN")]
    kinds = {"tangent": "the tangent pass", "dual": "dual numbers"}
    jvps = set(peer["FGN JVP"])
    jvp_kind = kinds[jvps.pop()] if len(jvps) == 1 else "whichever of the two was faster in each run"
    lines += [
        "",
        "### The CNN against PyTorch" + (" (AVX2 kernels)" if AVX2 else ""),
        "",
        "The same CNN, products and steps in PyTorch (bench/cnn_peer.py: `torch.nn.functional` convolutions,",
        "reverse mode by `torch.autograd.grad`, J v by the tangent pass written out op by op as forward",
        "mode builds it, or by PyTorch's dual numbers, `torch.autograd.forward_ad`; the Adam step is",
        "`torch.optim.Adam`; the FGN step is FGN's default matrix-free step, product for product: the",
        "gradient, the noise estimate's probe, every one of the 5 CG iterations with the parameter",
        "stopping rule's VJP, J_z d for the step length on the GGN and Levenberg-Marquardt's model, and the",
        f"trial point's logits; its JVPs by {jvp_kind}).",
        "The sgemm-equivalent floor is the time of the matrix products a product or step amounts to when",
        "each convolution is computed as im2col, [b·64, 9]·[9, 16] (conv1), [b·64, 144]·[144, 16] (conv2)",
        "and [b, 1024]·[1024, 10] (the dense layer), each shape timed with torch (best of 20, "
        f"{floors['conv1']:.2f}, {floors['conv2']:.2f} and {floors['dense']:.2f} ms): a forward pass is one of each, a JVP and a",
        "VJP conv1 + 2 conv2 + 2 dense, a step of Adam a forward pass and a VJP, a step of FGN two",
        "forward passes, 6 JVPs and 7 VJPs.",
        "",
        "| product or step | Go ms, cnn | Go ms, cnn-lowered | PyTorch ms | cnn / PyTorch | cnn-lowered / PyTorch | sgemm floor ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, bench, sub, unit, peer_cell in rows:
        a, b = cell(bench, "cnn", sub, unit), cell(bench, "cnn-lowered", sub, unit)
        t = peer[peer_cell]
        lines.append(f"| {label} | {fmt(a, 1)} | {fmt(b, 1)} | {fmt(t, 1)} | {ratio(median(a), median(t))} | "
                     f"{ratio(median(b), median(t))} | {cnn_peer.floor_ms(peer_cell, floors):.1f} |")
    dual, tangent = median(peer["forward+JVP (dual numbers)"]), median(peer["forward+JVP"])
    lines += [
        "",
        f"PyTorch's forward + JVP takes {tangent:.1f} ms by the tangent pass and {dual:.1f} ms by dual numbers.",
        "The targets, from the medians above:",
        "",
    ]
    for model in CNN_MODELS:
        fgn = median(cell("BenchmarkZooFixedCG", model, "FGN"))
        adam = median(cell("BenchmarkModelZoo", model, "Adam"))
        lines.append(f"- {model}: FGN step / PyTorch's FGN step = {ratio(fgn, median(peer['FGN']))} (target ≤ 2); "
                     f"FGN step / Adam step on the same model = {ratio(fgn, adam)} (target ≤ 3)")
    lines.append(ZOO_END)
    return "\n".join(lines) + "\n"


CONV_BEGIN, CONV_END = marker("--conv"), marker("--conv", True)
CONV_CALLS = 10  # calls of each convolution, direct and lowered, per run


def measure_jvp(binary, root, runs, pattern, calls, key):
    """Runs jvp's benchmarks matching pattern (time_go_all), calls calls each, runs times over;
    returns {key(sub-benchmark name): [metrics of each run]}."""
    cells = {}
    for run in range(runs):
        load = load_average()
        for name, metrics in time_go_all(binary, root, pattern, calls, "jvp").items():
            metrics["load"] = load
            cells.setdefault(key(name), []).append(metrics)
        print(f"run {run + 1}/{runs}: {pattern.split('/')[0]} done (load {load_average():.2f})", flush=True)
    return cells


def jvp_conditions(loads, all_loads, machine, started, pair):
    """The date, machine and Go lines of a jvp benchmark's section and, where the machine was
    shared, a note that pair (what each ratio compares) ran in turn under the same load."""
    go_version, modules = machine["go"]
    lines = [
        f"- date: {started:%Y-%m-%d}; 1-minute load average {loads[0]:.2f} at start, {loads[1]:.2f} at end, "
        f"{min(all_loads):.2f}-{max(all_loads):.2f} at the runs (the benchmark's own threads included)",
        f"- machine: {machine['cpu']}; {platform.system()} {platform.release()}",
        f"- Go: {go_version}, {modules}, backend: pure Go (default), GOEXPERIMENT=simd",
    ]
    if max(list(loads) + all_loads) > THREADS + 0.5:
        lines += ["", f"The machine was shared with other jobs (1-minute load up to {max(list(loads) + all_loads):.1f} "
                  f"on {os.cpu_count()} logical CPUs): {pair} ran in turn under the same load, so "
                  "their ratio means more than either; regenerate them in a quiet window."]
    return lines


def conv_report(cells, runs, loads, machine, started):
    """The section of BENCHMARKS.md on convolutions lowered to matrix products."""
    all_loads = [m["load"] for ms in cells.values() for m in ms]

    def fmt(values, digits):
        m, lo, hi = median(values), min(values), max(values)
        return f"{m:.{digits}f}" if runs == 1 else f"{m:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"

    lines = [
        CONV_BEGIN,
        "## Convolutions as matrix products" + (" (AVX2 kernels)" if AVX2 else ""),
        "",
        "Written by `bench/peer.py --conv" + (" --avx2" if AVX2 else "") + "` (regenerate with that command): "
        "`BenchmarkConvLowering` (jvp/convlower_bench_test.go), float32,",
        "the convolutions of `benchConvCases` (the zoo's CNN and text CNN and common layers beside them) and the two",
        "convolutions of GoMLX's VJP of each (with respect to the input and to the kernel), each computed",
        "by the pure-Go backend's direct convolution and lowered to a product of its patches as `jvp`'s",
        f"convolution pass lowers it, the two called in turn {CONV_CALLS} times each per run, "
        + (f"{runs} runs; cells are medians (ranges)." if runs > 1 else "one run."),
        "The pass lowers a convolution with at least 8 output channels per group (`minLoweredChannels`;",
        "last column) and keeps the others: with fewer, some run slower lowered and some faster, and",
        "the rule takes none of them.",
        "",
    ] + jvp_conditions(loads, all_loads, machine, started, "the two columns of a row")
    lines += [
        "",
        "| convolution | product | direct ms | lowered ms | lowered / direct | lowered by the pass |",
        "|---|---|---|---|---|---|",
    ]
    for (case, product), ms in cells.items():
        lines.append(f"| {case} | {product} | {fmt([m['direct-ms'] for m in ms], 2)} | "
                     f"{fmt([m['lowered-ms'] for m in ms], 2)} | {fmt([m['lowered/direct'] for m in ms], 2)} | "
                     f"{'yes' if ms[0]['pass-lowers'] else 'no'} |")
    lines.append(CONV_END)
    return "\n".join(lines) + "\n"


LAYOUT_BEGIN, LAYOUT_END = marker("--layout"), marker("--layout", True)
LAYOUT_CALLS = 100  # calls of each layout's graph (16 products each) per cell and run


def layout_cell(name):
    """The (n, k, m) of a BenchmarkSmallProductLayout sub-benchmark named "n=…,k=…,m=…"."""
    return tuple(int(part.split("=")[1]) for part in name.split(","))


def layout_report(cells, runs, loads, machine, started):
    """The section of BENCHMARKS.md on the rhs layouts of small products."""
    all_loads = [m["load"] for ms in cells.values() for m in ms]
    ratio_of = {cell: median([m["[m,k]/[k,m]"] for m in ms]) for cell, ms in cells.items()}
    picks = {cell: ms[0]["pass-picks-[k,m]"] == 1 for cell, ms in cells.items()}
    # What the pass's pick costs against the other layout (> 1: the other was faster), and saves.
    loss = {cell: (1 / r if picks[cell] else r) for cell, r in ratio_of.items()}
    worst = max(loss, key=loss.get)
    ns, ks, ms = (sorted({cell[i] for cell in cells}) for i in range(3))
    lines = [
        LAYOUT_BEGIN,
        "## Small products: the rhs layout" + (" (AVX2 kernels)" if AVX2 else ""),
        "",
        "Written by `bench/peer.py --layout" + (" --avx2" if AVX2 else "") + "` (regenerate with that command): "
        "`BenchmarkSmallProductLayout` (jvp/relayout_bench_test.go), float32",
        "products of a lhs [n, k] by a rhs laid out [k, m] (contracting axis first) and [m, k] (last), below the",
        "pure-Go backend's small-kernel threshold (2²² multiply-adds), 16 products of distinct lhs per call,",
        f"the two layouts called in turn {LAYOUT_CALLS} times each per run, "
        + (f"{runs} runs; cells are medians." if runs > 1 else "one run."),
        "Each cell is the time with the rhs [m, k] over the time with it [k, m] (above 1: [k, m] is faster),",
        "and the layout `jvp`'s relayout pass gives an invariant rhs of a product in a linear map's clones",
        "(rewrite 4, `smallRHSContractingFirst`: [k, m] when m is a multiple of 16 or k < 32).",
        "",
    ] + jvp_conditions(loads, all_loads, machine, started, "the two layouts of a cell")
    for n in ns:
        lines += ["", f"n = {n}, [m, k] / [k, m] (the pass's layout):", "",
                  "| k ↓, m → | " + " | ".join(str(m) for m in ms) + " |",
                  "|---|" + "---|" * len(ms)]
        for k in ks:
            row = [f"{ratio_of[(n, k, m)]:.2f} ({'[k, m]' if picks[(n, k, m)] else '[m, k]'})" for m in ms]
            lines.append(f"| {k} | " + " | ".join(row) + " |")
    other = sorted(1 / l for l in loss.values())  # the other layout's time over the pass's
    lines += ["", f"The pass's layout is the faster one, or within {100 * (loss[worst] - 1):.0f} % of it, in every cell "
              f"(the worst: n = {worst[0]}, k = {worst[1]}, m = {worst[2]}); the other layout takes "
              f"{other[0]:.2f}-{other[-1]:.2f} times the pass's time (median {median(other):.2f}).",
              LAYOUT_END]
    return "\n".join(lines) + "\n"


def measure(binary, root, shapes, steps_of, scale, runs=1):
    """Runs every method at every (b, C) of shapes, Go then PyTorch, runs times over (each run
    through every cell, so that drift in the machine's speed spreads over the cells); returns the
    rows, each with the median of every Go metric and of the PyTorch time and their values in
    every run, and the sgemm times, measured before and after the steps (the faster kept)."""
    sgemm = {shape: sgemm_ms(*shape) for shape in shapes}
    cells = {}
    for run in range(runs):
        for b, c in shapes:
            steps = steps_of(b, c)
            for method in METHODS:
                load = load_average()
                go = time_go(binary, root, go_benchmark(b, c, method, scale), steps)
                peer = time_torch(method, b, c, steps)
                cell = cells.setdefault((b, c, method), {"batch": b, "classes": c, "method": method, "go_runs": [],
                                                         "torch_runs": [], "loads": []})
                cell["go_runs"].append(go)
                cell["torch_runs"].append(peer)
                cell["loads"].append(load)
                print(f"run {run + 1}/{runs} b={b} C={c} {method}: Go {go['ms/step']:.1f} ms, "
                      f"PyTorch {peer:.1f} ms (load {load:.2f})", flush=True)
    rows = []
    for cell in cells.values():
        cell["go"] = {unit: median([g[unit] for g in cell["go_runs"]]) for unit in cell["go_runs"][0]}
        cell["torch"] = median(cell["torch_runs"])
        cell["load"] = median(cell["loads"])
        rows.append(cell)
    for shape in shapes:
        sgemm[shape] = {lib: min(ms, again) for (lib, ms), again in zip(sgemm[shape].items(), sgemm_ms(*shape).values())}
    return rows, sgemm


def spread(values):
    """(max − min) / median of values, the run-to-run spread."""
    return (max(values) - min(values)) / median(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps-small", type=int, default=40, help="timed steps at C=256")
    parser.add_argument("--steps-large", type=int, default=12, help="timed steps at C=4096")
    parser.add_argument("--scale", action="store_true",
                        help="run BenchmarkStepScale's shapes instead and write the scale section, CSV and figure")
    parser.add_argument("--scale-steps", type=int, default=0,
                        help="with --scale, timed steps of every cell (default: scale_steps, 3 to 40 by the shape)")
    parser.add_argument("--zoo", action="store_true",
                        help="run the model zoo's cost benchmarks and the CNN's PyTorch peer instead and write the zoo section")
    parser.add_argument("--conv", action="store_true",
                        help="run jvp's BenchmarkConvLowering instead and write the section on convolutions as products")
    parser.add_argument("--layout", action="store_true",
                        help="run jvp's BenchmarkSmallProductLayout instead and write the section on small products' layouts")
    parser.add_argument("--runs", type=int, default=5,
                        help="with --scale, --zoo, --conv or --layout, how many times every cell is run (medians and spreads reported)")
    parser.add_argument("--avx2", action="store_true",
                        help="run the Go benchmarks and the PyTorch peer on their AVX2 kernels on an AVX-512 machine "
                             "and write the sections marked --avx2")
    parser.add_argument("--out", default="BENCHMARKS.md", help="file whose peer (or scale, or zoo) section is rewritten")
    args = parser.parse_args()
    if args.steps_small < 1 or args.steps_large < 1 or args.scale_steps < 0:
        sys.exit("bench/peer.py: --steps-small and --steps-large must be ≥ 1, --scale-steps ≥ 0")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    torch.set_num_threads(THREADS)
    started = datetime.datetime.now(datetime.timezone.utc)
    machine = {"cpu": cpu_model(), "blas": blas_description(), "go": go_versions(root)}
    load_start = load_average()
    if args.runs < 1:
        sys.exit("bench/peer.py: --runs must be ≥ 1")
    if args.conv:
        with tempfile.TemporaryDirectory() as tmp:
            binary = os.path.join(tmp, "jvp.test")
            build_go_test(root, binary, "./jvp")
            cells = measure_jvp(binary, root, args.runs, "BenchmarkConvLowering/.*/.*", CONV_CALLS,
                                lambda name: tuple(name.split("/")))
        section = conv_report(cells, args.runs, (load_start, load_average()), machine, started)
        write_section(os.path.join(root, args.out), section, CONV_BEGIN, CONV_END)
        print(section)
        return
    if args.layout:
        with tempfile.TemporaryDirectory() as tmp:
            binary = os.path.join(tmp, "jvp.test")
            build_go_test(root, binary, "./jvp")
            cells = measure_jvp(binary, root, args.runs, "BenchmarkSmallProductLayout/.*", LAYOUT_CALLS, layout_cell)
        section = layout_report(cells, args.runs, (load_start, load_average()), machine, started)
        write_section(os.path.join(root, args.out), section, LAYOUT_BEGIN, LAYOUT_END)
        print(section)
        return
    if args.zoo:
        with tempfile.TemporaryDirectory() as tmp:
            binary = os.path.join(tmp, "zoo.test")
            build_go_test(root, binary, "./" + ZOO_PACKAGE)
            floors = cnn_peer.conv_products_ms()
            go, peer = measure_zoo(binary, root, args.runs)
            floors = {k: min(v, again) for (k, v), again in zip(floors.items(), cnn_peer.conv_products_ms().values())}
        section = zoo_report(go, peer, floors, args.runs, (load_start, load_average()), machine, started)
        write_section(os.path.join(root, args.out), section, ZOO_BEGIN, ZOO_END)
        print(section)
        return
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "train.test")
        build_go_test(root, binary)
        if args.scale:
            steps_of = (lambda b, c: args.scale_steps) if args.scale_steps else scale_steps
            rows, sgemm = measure(binary, root, SCALE_SHAPES, steps_of, True, args.runs)
        else:
            rows, sgemm = measure(binary, root, [(BATCH, c) for c in CLASSES],
                                  lambda b, c: args.steps_small if c < 1024 else args.steps_large, False)
    loads = (load_start, load_average())
    if args.scale:
        if not AVX2:
            write_file(os.path.join(root, SCALE_CSV), scale_csv(rows, sgemm, loads, machine, started))
            subprocess.run(["go", "run", "./bench/scalefig", "-csv", SCALE_CSV, "-out", SCALE_FIGURE], cwd=root,
                           env=go_env(root), check=True)
        steps = (f"{args.scale_steps} (--scale-steps)" if args.scale_steps else
                 "12 at b=512, C=4096, in inverse proportion to b·C elsewhere, between 3 and 40")
        section = scale_report(rows, sgemm, loads, machine, started, steps, args.runs)
        write_section(os.path.join(root, args.out), section, SCALE_BEGIN, SCALE_END)
    else:
        section = report(rows, sgemm, loads, machine, started)
        write_section(os.path.join(root, args.out), section)
    print(section)


if __name__ == "__main__":
    main()
