#!/usr/bin/env python3
"""Prices published Megatron-LM GPT training runs with Shardscope and compares.

Source: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC'21 (arXiv:2104.04473), Table 1: GPT models of sequence 2048 and
vocabulary 51,200 on DGX A100 80 GB nodes (Selene), mixed precision, activation
recomputation, throughput per GPU in teraFLOP/s by their formula
96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per iteration.

  benchmarks/published_configs.py [--shardscope build/bin/shardscope] [--search MODE]

For each row: the published configuration (tensor × data parallel, Megatron's split of every
block) priced on the dgx-a100-80gb profile at bf16, the published step time derived from the
published throughput, their ratio; then the plan a search chooses on the same model and
cluster, priced the same way. Each with its peak memory per GPU and the memory options `plan`
chose to fit the 80 GB (ZeRO stage, recomputation; docs/memory.md).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# (parameters, layers, hidden, heads, tensor parallel, GPUs, global batch, TFLOP/s per GPU)
TABLE1 = [("1.7B", 24, 2304, 24, 1, 32, 512, 137),
          ("3.6B", 30, 3072, 32, 2, 64, 512, 138),
          ("7.5B", 36, 4096, 32, 4, 128, 512, 142),
          ("18.4B", 40, 6144, 48, 8, 256, 1024, 135)]
SEQ, VOCAB = 2048, 51200


def plan(shardscope, model, batch, extra):
    # Megatron-LM as of the paper all-reduces the gradients after the backward (train_step:
    # allreduce_gradients once backward_step is done), so nothing overlaps: --no-overlap.
    r = subprocess.run([shardscope, "plan", model, "--cluster", "dgx-a100-80gb", "--dtype", "bf16",
                        "--batch", str(batch), "--json", "--no-overlap"] + extra,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"plan {model} failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def memory(plan_json):
    """Peak memory per GPU and the memory options that fit it (docs/memory.md)."""
    m = plan_json["memory"]
    fits = "fits" if m["fits"] else "does not fit"
    recompute = "every layer" if m["recompute"] == ["*"] else f"{len(m['recompute'])} scopes"
    return (f"{plan_json['memory_per_device_bytes'] / 2**30:.0f} GiB ({fits}; ZeRO "
            f"{m['optimizer_sharding']}, recompute {recompute})")


def split(plan_json):
    """The most common split of the MatMuls: data x tensor parallel as the search chose it."""
    counts = {}
    for op in plan_json["operators"]:
        if op["name"].endswith(".matmul"):
            counts[op["strategy"]] = counts.get(op["strategy"], 0) + 1
    return max(counts, key=counts.get) if counts else plan_json["device_mesh"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", default=os.path.join(HERE, "..", "build", "bin", "shardscope"))
    ap.add_argument("--search", default="dynamic_programming", help="search for the chosen plans")
    ap.add_argument("--plan-args", default="--recompute",
                    help="arguments for every plan (default --recompute: the published runs recompute "
                         "activations; \"\" to price without)")
    a = ap.parse_args()
    extra = a.plan_args.split()
    gen = os.path.join(HERE, "..", "scripts", "megatron_gpt.py")
    print("| model | TP × DP | published step | predicted (published config) | ratio | its memory "
          "per GPU | searched plan | its split | its memory per GPU |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, l, h, heads, tp, gpus, batch, tflops in TABLE1:
            dp = gpus // tp
            flops = 96 * batch * SEQ * l * h * h * (1 + SEQ / (6 * h) + VOCAB / (16 * l * h))
            published = flops / (tflops * 1e12 * gpus)
            shape = ["--layers", str(l), "--hidden", str(h), "--heads", str(heads)]
            fixed, free = os.path.join(tmp, "fixed.yaml"), os.path.join(tmp, "free.yaml")
            for path, args in ((fixed, ["--tp", str(tp), "--dp", str(dp)]),
                               (free, ["--dp", str(gpus), "--search", a.search])):
                with open(path, "w") as f:
                    subprocess.run([sys.executable, gen] + shape + args, stdout=f, check=True)
            p = plan(a.shardscope, fixed, batch, extra)
            s = plan(a.shardscope, free, batch, extra)
            t, ts = p["predicted_step_seconds"], s["predicted_step_seconds"]
            print(f"| GPT {name} | {tp} × {dp} | {published:.2f} s | {t:.2f} s | {t / published:.2f} "
                  f"| {memory(p)} | {ts:.2f} s | {split(s)} | {memory(s)} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
