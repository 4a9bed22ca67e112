#!/usr/bin/env python3
"""Training step time of the seeds' FFN and LeNet5: Shardscope against PyTorch, one thread.

Runs the Google Benchmark binary `bench_train_step` (Shardscope) and the same models in
PyTorch in one invocation, interleaved round by round (A, B, then B, A, ...) so that a noisy
machine hurts both sides alike, and prints the medians and the ratio shardscope / pytorch
(below 1: Shardscope is faster).

  python3 benchmarks/compare_pytorch.py --shardscope build/bin/bench_train_step
  python3 benchmarks/compare_pytorch.py --rounds 9 --json results.json

Needs PyTorch from Debian with OpenBLAS (without libopenblas0-pthread, PyTorch falls back to
the slow reference BLAS):
  apt-get install -y --no-install-recommends python3-torch libopenblas0-pthread
If `python3` on PATH is not Debian's (pyenv, venv) and lacks torch, the script re-runs itself
under /usr/bin/python3 when that one has torch.

Both sides: synthetic random batches of the same shapes (FFN [B,1,28,28], LeNet5 [B,1,32,32],
labels int [B] in 0..9), cross-entropy loss, Momentum SGD (lr 0.01, momentum 0.9), one thread
(OMP/OPENBLAS/MKL_NUM_THREADS=1, torch.set_num_threads(1)). A round times each side in
`--blocks` blocks of at least `--block-time` seconds; a round's figure is the median of its
blocks' mean step times; the reported figure is the median over rounds.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

# Before torch (and its OpenMP / OpenBLAS) is loaded, and inherited by the C++ binary.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

APT_LINE = "apt-get install -y --no-install-recommends python3-torch libopenblas0-pthread"
DEBIAN_PYTHON = "/usr/bin/python3"

CONFIGS = [("FFN", 32), ("FFN", 256), ("LeNet5", 32), ("LeNet5", 256)]
# Orientation figures from the issue (PyTorch 1.13 + OpenBLAS, one thread, this machine).
ISSUE_PYTORCH_MS = {("FFN", 32): 4.5, ("FFN", 256): 14.0, ("LeNet5", 32): 7.1, ("LeNet5", 256): 41.0}


def import_torch():
    """Imports torch, or re-executes under Debian's python3, or exits with the apt-get line."""
    try:
        import torch  # noqa: PLC0415
        return torch
    except ImportError:
        pass
    if (os.path.exists(DEBIAN_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON)
            and not os.environ.get("SHARDSCOPE_BENCH_REEXEC")):
        probe = subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True)
        if probe.returncode == 0:
            print(f"note: torch is not importable by {sys.executable}; re-running under {DEBIAN_PYTHON}",
                  file=sys.stderr)
            os.environ["SHARDSCOPE_BENCH_REEXEC"] = "1"
            os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON] + sys.argv)
    print("error: PyTorch is not installed (import torch failed). As root run:\n"
          f"  apt-get update && {APT_LINE}", file=sys.stderr)
    sys.exit(2)


def blas_report(torch):
    """Which BLAS torch was built for and which shared library it actually loaded."""
    config = torch.__config__.show()
    build = [line.strip() for line in config.splitlines() if "BLAS_INFO" in line or "MKL" in line]
    match = re.search(r"BLAS_INFO=([^,\s]+)", config)
    blas_info = match.group(1) if match else "?"
    # Make sure BLAS is really loaded: one GEMM first (libraries may be loaded lazily).
    torch.mm(torch.ones(8, 8), torch.ones(8, 8))
    libs = set()
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path)
            if any(key in name for key in ("openblas", "libblas", "liblapack", "mkl", "blis", "atlas")):
                libs.add(os.path.realpath(path))
    libs = sorted(libs)
    if any("openblas" in lib for lib in libs):
        verdict = "OpenBLAS"
    elif any("/blas/" in lib or "libblas.so" in lib for lib in libs):
        verdict = "reference BLAS (slow! install libopenblas0-pthread)"
    elif any("mkl" in lib for lib in libs):
        verdict = "MKL"
    else:
        verdict = "none found in /proc/self/maps"
    return {"verdict": verdict, "libraries": libs, "build_blas_info": blas_info, "build_lines": build}


# ---------------------------------------------------------------------------------------------
# PyTorch side


def make_model(torch, name):
    nn = torch.nn
    if name == "FFN":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 512), nn.ReLU(),
            nn.Linear(512, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 64), nn.ReLU(),
            nn.Linear(64, 10))
    if name == "LeNet5":
        return nn.Sequential(
            nn.Conv2d(1, 6, 5, bias=False), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5, bias=False), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(400, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, 10))
    raise ValueError(name)


class TorchStep:
    """One model, optimiser and fixed synthetic batch; step() is one training step."""

    def __init__(self, torch, name, batch):
        torch.manual_seed(1)
        self.model = make_model(torch, name)
        self.model.train()
        side = 28 if name == "FFN" else 32
        gen = torch.Generator().manual_seed(7)
        self.x = torch.randn(batch, 1, side, side, generator=gen)
        self.y = torch.randint(0, 10, (batch,), generator=gen)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        for _ in range(5):  # warm-up: allocator, momentum buffers, oneDNN primitives
            self.step()

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()
        return loss


def time_torch(step, blocks, block_time):
    """Median over blocks of the mean step time; (wall ms, cpu ms)."""
    for _ in range(2):  # re-warm caches after the other side ran
        step.step()
    walls, cpus = [], []
    for _ in range(blocks):
        n = 0
        w0, c0 = time.perf_counter(), time.process_time()
        while True:
            step.step()
            n += 1
            w = time.perf_counter() - w0
            if w >= block_time:
                break
        walls.append(1e3 * w / n)
        cpus.append(1e3 * (time.process_time() - c0) / n)
    return statistics.median(walls), statistics.median(cpus)


# ---------------------------------------------------------------------------------------------
# Shardscope side


def bench_name(model, batch):
    return f"BM_TrainStep/{model}/{batch}"


def time_shardscope(binary, model, batch, blocks, block_time):
    """Runs one benchmark of the binary; median over repetitions; (wall ms, cpu ms)."""
    cmd = [binary, f"--benchmark_filter=^{bench_name(model, batch)}$",
           "--benchmark_format=json", f"--benchmark_repetitions={blocks}",
           f"--benchmark_min_time={block_time}", "--benchmark_report_aggregates_only=false"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    runs = [b for b in json.loads(proc.stdout)["benchmarks"] if b.get("run_type") == "iteration"]
    if not runs:
        sys.exit(f"error: {binary} ran no benchmark named {bench_name(model, batch)}")
    for run in runs:
        if run.get("error_occurred"):
            sys.exit(f"error: {bench_name(model, batch)}: {run.get('error_message')}")
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    wall = [r["real_time"] * scale[r["time_unit"]] for r in runs]
    cpu = [r["cpu_time"] * scale[r["time_unit"]] for r in runs]
    return statistics.median(wall), statistics.median(cpu)


# ---------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shardscope", default="build/bin/bench_train_step",
                        help="path of the bench_train_step binary (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default: %(default)s)")
    parser.add_argument("--blocks", type=int, default=5,
                        help="timed blocks per side per round (default: %(default)s)")
    parser.add_argument("--block-time", type=float, default=0.2,
                        help="minimum seconds per block (default: %(default)s)")
    parser.add_argument("--only", action="append", metavar="MODEL/BATCH",
                        help="restrict to some rows, e.g. --only LeNet5/256 (repeatable)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args()

    torch = import_torch()
    binary = args.shardscope
    if not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        found = shutil.which(binary)
        if not found:
            sys.exit(f"error: Shardscope benchmark binary not found: {binary}\n"
                     "  build it: cmake --build build --target bench_train_step")
        binary = found

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    blas = blas_report(torch)

    configs = CONFIGS
    if args.only:
        wanted = {tuple(o.split("/")) for o in args.only}
        configs = [c for c in CONFIGS if (c[0], str(c[1])) in wanted]
        if not configs:
            sys.exit(f"error: --only matched no row of {['%s/%d' % c for c in CONFIGS]}")

    print(f"PyTorch {torch.__version__} (python {sys.version.split()[0]}, {sys.executable}), "
          f"threads {torch.get_num_threads()}")
    print(f"BLAS loaded by PyTorch: {blas['verdict']}")
    for lib in blas["libraries"]:
        print(f"  {lib}")
    print(f"PyTorch build: BLAS_INFO={blas['build_blas_info']}, "
          f"mkldnn {'on' if torch.backends.mkldnn.is_available() else 'off'}")
    print(f"Shardscope: {binary}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} CPUs; other work on the machine slows both sides)")
    print(f"{args.rounds} interleaved rounds x {args.blocks} blocks x >= {args.block_time}s per side",
          flush=True)

    steps = {c: TorchStep(torch, *c) for c in configs}
    results = {c: {"shardscope": [], "pytorch": []} for c in configs}
    for r in range(args.rounds):
        for c in configs:
            order = ("shardscope", "pytorch") if r % 2 == 0 else ("pytorch", "shardscope")
            for side in order:
                if side == "shardscope":
                    m = time_shardscope(binary, c[0], c[1], args.blocks, args.block_time)
                else:
                    m = time_torch(steps[c], args.blocks, args.block_time)
                results[c][side].append(m)
        summary = "  ".join(f"{c[0]}/{c[1]} {results[c]['shardscope'][-1][0]:.2f}|"
                            f"{results[c]['pytorch'][-1][0]:.2f}" for c in configs)
        print(f"round {r + 1}/{args.rounds}: (ms, shardscope|pytorch) {summary}", file=sys.stderr,
              flush=True)

    rows = []
    for c in configs:
        s = results[c]["shardscope"]
        p = results[c]["pytorch"]
        row = {
            "model": c[0], "batch": c[1],
            "shardscope_ms": statistics.median(x[0] for x in s),
            "pytorch_ms": statistics.median(x[0] for x in p),
            "shardscope_cpu_ms": statistics.median(x[1] for x in s),
            "pytorch_cpu_ms": statistics.median(x[1] for x in p),
            "shardscope_rounds_ms": [x[0] for x in s],
            "pytorch_rounds_ms": [x[0] for x in p],
        }
        row["ratio"] = row["shardscope_ms"] / row["pytorch_ms"]
        row["cpu_ratio"] = row["shardscope_cpu_ms"] / row["pytorch_cpu_ms"]
        rows.append(row)

    print()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("Training step time, one thread, median of interleaved rounds (wall clock; CPU time right)")
    header = (f"{'model':<8}{'batch':>6}{'shardscope ms':>15}{'pytorch ms':>12}{'ratio':>8}"
              f"   |{'cpu: shardscope':>16}{'pytorch':>9}{'ratio':>8}")
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row['model']:<8}{row['batch']:>6}{row['shardscope_ms']:>15.2f}{row['pytorch_ms']:>12.2f}"
              f"{row['ratio']:>8.2f}   |{row['shardscope_cpu_ms']:>16.2f}{row['pytorch_cpu_ms']:>9.2f}"
              f"{row['cpu_ratio']:>8.2f}")
    print("ratio = shardscope / pytorch (< 1: Shardscope faster). "
          "Issue's orientation for PyTorch: " +
          ", ".join(f"{m}/{b} {ms:g} ms" for (m, b), ms in ISSUE_PYTORCH_MS.items()))

    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"torch_version": torch.__version__, "blas": blas, "rounds": args.rounds,
                       "blocks": args.blocks, "block_time": args.block_time, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
