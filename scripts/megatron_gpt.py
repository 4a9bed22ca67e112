#!/usr/bin/env python3
"""Writes a Megatron-LM-shaped GPT (Narayanan et al. 2021, arXiv:2104.04473) as a model file:
token embedding, learned positions, pre-LayerNorm blocks, logits tied to the embedding.

  scripts/megatron_gpt.py --layers 24 --hidden 2304 --heads 24 --tp 1 --dp 32 > gpt1.7b.yaml
  scripts/megatron_gpt.py --layers 24 --hidden 2304 --heads 24 --dp 32 --search dynamic_programming

With --tp/--dp: Megatron's split of every block (q/k/v and fc1 by columns, proj and fc2 by
rows, attention by heads) as strategies; with --search: none, the search chooses.
"""
import argparse

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--layers", type=int, required=True)
p.add_argument("--hidden", type=int, required=True)
p.add_argument("--heads", type=int, required=True)
p.add_argument("--seq", type=int, default=2048)
p.add_argument("--vocab", type=int, default=51200)
p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree (Megatron's split)")
p.add_argument("--dp", type=int, default=1, help="data-parallel degree")
p.add_argument("--search", default="", help="no strategies: this search chooses every operator's")
a = p.parse_args()
h, s, v, nh = a.hidden, a.seq, a.vocab, a.heads
d = h // nh
out = [f"name: megatron_gpt_{a.layers}x{h}", f"input: {{shape: [{s}], dtype: i32}}", f"classes: {v}",
       "parameters:", f"  embedding.table: {{shape: [{v}, {h}], init: normal(0.02)}}",
       f"  position.table: {{shape: [{s}, {h}], init: normal(0.02)}}"]
ops = ["  - embedding.gather: {op: Gather, inputs: [embedding.table, x]}",
       "  - position.add: {op: Add, inputs: [embedding.gather, position.table]}"]
strat = []
prev = "position.add"
for i in range(a.layers):
    L = f"layer{i}"
    for n, shape in [("ln1.gamma", [h]), ("ln1.beta", [h]), ("query.weight", [h, h]), ("query.bias", [h]),
                     ("key.weight", [h, h]), ("key.bias", [h]), ("value.weight", [h, h]), ("value.bias", [h]),
                     ("proj.weight", [h, h]), ("proj.bias", [h]), ("ln2.gamma", [h]), ("ln2.beta", [h]),
                     ("fc1.weight", [h, 4 * h]), ("fc1.bias", [4 * h]), ("fc2.weight", [4 * h, h]), ("fc2.bias", [h])]:
        init = "ones" if n.endswith("gamma") else "zeros" if n.endswith(("beta", "bias")) else "normal(0.02)"
        out.append(f"  {L}.{n}: {{shape: {shape}, init: {init}}}")
    heads = f"[-1, {s}, {nh}, {d}]"
    ops.append(f"  - {L}.ln1: {{op: LayerNorm, inputs: [{prev}, {L}.ln1.gamma, {L}.ln1.beta]}}")
    for q in ("query", "key", "value"):
        ops += [f"  - {L}.{q}.matmul: {{op: MatMul, inputs: [{L}.ln1, {L}.{q}.weight]}}",
                f"  - {L}.{q}.bias_add: {{op: Add, inputs: [{L}.{q}.matmul, {L}.{q}.bias]}}",
                f"  - {L}.{q}.heads: {{op: Reshape, shape: {heads}}}",
                f"  - {L}.{q}.t: {{op: Transpose, perm: [0, 2, 1, 3]}}"]
        strat.append(f"    {L}.{q}.matmul: (({a.dp}, 1, 1), (1, {a.tp}))")
    ops += [f"  - {L}.scores: {{op: BatchMatMul, inputs: [{L}.query.t, {L}.key.t], transpose_b: true}}",
            f"  - {L}.scale: {{op: Scale, scale: {1.0 / d ** 0.5:.6f}}}",
            f"  - {L}.softmax: {{op: Softmax}}",
            f"  - {L}.context: {{op: BatchMatMul, inputs: [{L}.softmax, {L}.value.t]}}",
            f"  - {L}.context_t: {{op: Transpose, perm: [0, 2, 1, 3]}}",
            f"  - {L}.merge: {{op: Reshape, shape: [-1, {s}, {h}]}}",
            f"  - {L}.proj.matmul: {{op: MatMul, inputs: [{L}.merge, {L}.proj.weight]}}",
            f"  - {L}.proj.bias_add: {{op: Add, inputs: [{L}.proj.matmul, {L}.proj.bias]}}",
            f"  - {L}.residual1: {{op: Add, inputs: [{prev}, {L}.proj.bias_add]}}",
            f"  - {L}.ln2: {{op: LayerNorm, inputs: [{L}.residual1, {L}.ln2.gamma, {L}.ln2.beta]}}",
            f"  - {L}.fc1.matmul: {{op: MatMul, inputs: [{L}.ln2, {L}.fc1.weight]}}",
            f"  - {L}.fc1.bias_add: {{op: Add, inputs: [{L}.fc1.matmul, {L}.fc1.bias]}}",
            f"  - {L}.gelu: {{op: GeLU}}",
            f"  - {L}.fc2.matmul: {{op: MatMul, inputs: [{L}.gelu, {L}.fc2.weight]}}",
            f"  - {L}.fc2.bias_add: {{op: Add, inputs: [{L}.fc2.matmul, {L}.fc2.bias]}}",
            f"  - {L}.residual2: {{op: Add, inputs: [{L}.residual1, {L}.fc2.bias_add]}}"]
    strat += [f"    {L}.scores: (({a.dp}, {a.tp}, 1, 1), ({a.dp}, {a.tp}, 1, 1))",
              f"    {L}.context: (({a.dp}, {a.tp}, 1, 1), ({a.dp}, {a.tp}, 1, 1))",
              f"    {L}.proj.matmul: (({a.dp}, 1, {a.tp}), ({a.tp}, 1))",
              f"    {L}.fc1.matmul: (({a.dp}, 1, 1), (1, {a.tp}))",
              f"    {L}.fc2.matmul: (({a.dp}, 1, {a.tp}), ({a.tp}, 1))"]
    prev = f"{L}.residual2"
out += [f"  ln_f.gamma: {{shape: [{h}], init: ones}}", f"  ln_f.beta: {{shape: [{h}], init: zeros}}"]
ops += [f"  - ln_f: {{op: LayerNorm, inputs: [{prev}, ln_f.gamma, ln_f.beta]}}",
        "  - logits: {op: MatMul, inputs: [ln_f, embedding.table], transpose_b: true}"]
strat.append(f"    logits: (({a.dp}, 1, 1), ({a.tp}, 1))")
print("\n".join(out))
print("operators:")
print("\n".join(ops))
print("loss: sequence_cross_entropy")
print("training: {batch: 512, epochs: 1, seed: 1}")
print("data: {dataset: synthetic, synthetic_size: 1024}")
print("parallel:")
print("  mode: auto")
print(f"  search: {a.search or 'sharding_propagation'}")
print(f"  devices: {a.dp * a.tp}")
if not a.search:
    print("  strategies:")
    print("\n".join(strat))
