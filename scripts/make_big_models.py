#!/usr/bin/env python3
"""Writes large model files for the viewer's real-size checks (issue 21).

  scripts/make_big_models.py gpt LAYERS > gpt.yaml   GPT-style pre-LayerNorm blocks
  scripts/make_big_models.py mlp LAYERS > mlp.yaml   Dense + ReLU layers

Then: shardscope plan gpt.yaml --devices 8 --record gpt.db
      shardscope render gpt.db --view graph --out gpt.png
"""
import sys

TOKENS, DIM, HEADS, CLASSES = 16, 64, 4, 10


def gpt(layers):
    out = [f"name: gpt{layers}", f"input: {{shape: [{TOKENS}, {DIM}]}}",
           f"classes: {CLASSES}", "parameters:"]
    ops = []
    prev = "x"
    head_dim = DIM // HEADS
    for i in range(layers):
        p = f"layer{i}"
        out += [f"  {p}.ln1.gamma: {{shape: [{DIM}], init: ones}}",
                f"  {p}.ln1.beta: {{shape: [{DIM}], init: zeros}}",
                f"  {p}.attn.w_qkv: {{shape: [{DIM}, {3 * DIM}], init: normal}}",
                f"  {p}.attn.b_qkv: {{shape: [{3 * DIM}], init: zeros}}",
                f"  {p}.attn.w_out: {{shape: [{DIM}, {DIM}], init: normal}}",
                f"  {p}.attn.b_out: {{shape: [{DIM}], init: zeros}}",
                f"  {p}.ln2.gamma: {{shape: [{DIM}], init: ones}}",
                f"  {p}.ln2.beta: {{shape: [{DIM}], init: zeros}}",
                f"  {p}.mlp.w1: {{shape: [{DIM}, {4 * DIM}], init: normal}}",
                f"  {p}.mlp.b1: {{shape: [{4 * DIM}], init: zeros}}",
                f"  {p}.mlp.w2: {{shape: [{4 * DIM}, {DIM}], init: normal}}",
                f"  {p}.mlp.b2: {{shape: [{DIM}], init: zeros}}"]
        heads = f"[-1, {TOKENS}, {HEADS}, {head_dim}]"
        ops += [
            f"  - {p}.ln1.norm: {{op: LayerNorm, inputs: [{prev}, {p}.ln1.gamma, {p}.ln1.beta]}}",
            f"  - {p}.attn.qkv: {{op: MatMul, inputs: [{p}.ln1.norm, {p}.attn.w_qkv]}}",
            f"  - {p}.attn.qkv_bias: {{op: Add, inputs: [{p}.attn.qkv, {p}.attn.b_qkv]}}",
            f"  - {p}.attn.split: {{op: Split, inputs: [{p}.attn.qkv_bias], axis: 2, sizes: [{DIM}, {DIM}, {DIM}]}}",
        ]
        for k, name in enumerate("qkv"):
            ops += [f"  - {p}.attn.{name}_heads: {{op: Reshape, inputs: [{p}.attn.split:{k}], shape: {heads}}}",
                    f"  - {p}.attn.{name}_t: {{op: Transpose, inputs: [{p}.attn.{name}_heads], perm: [0, 2, 1, 3]}}"]
        ops += [
            f"  - {p}.attn.scores: {{op: BatchMatMul, inputs: [{p}.attn.q_t, {p}.attn.k_t], transpose_b: true}}",
            f"  - {p}.attn.scaled: {{op: Scale, inputs: [{p}.attn.scores], scale: 0.25}}",
            f"  - {p}.attn.softmax: {{op: Softmax, inputs: [{p}.attn.scaled], axis: -1}}",
            f"  - {p}.attn.dropout: {{op: Dropout, inputs: [{p}.attn.softmax], p: 0.1}}",
            f"  - {p}.attn.context: {{op: BatchMatMul, inputs: [{p}.attn.dropout, {p}.attn.v_t]}}",
            f"  - {p}.attn.merge_t: {{op: Transpose, inputs: [{p}.attn.context], perm: [0, 2, 1, 3]}}",
            f"  - {p}.attn.merge: {{op: Reshape, inputs: [{p}.attn.merge_t], shape: [-1, {TOKENS}, {DIM}]}}",
            f"  - {p}.attn.out: {{op: MatMul, inputs: [{p}.attn.merge, {p}.attn.w_out]}}",
            f"  - {p}.attn.out_bias: {{op: Add, inputs: [{p}.attn.out, {p}.attn.b_out]}}",
            f"  - {p}.attn.out_dropout: {{op: Dropout, inputs: [{p}.attn.out_bias], p: 0.1}}",
            f"  - {p}.residual1: {{op: Add, inputs: [{prev}, {p}.attn.out_dropout]}}",
            f"  - {p}.ln2.norm: {{op: LayerNorm, inputs: [{p}.residual1, {p}.ln2.gamma, {p}.ln2.beta]}}",
            f"  - {p}.mlp.fc1: {{op: MatMul, inputs: [{p}.ln2.norm, {p}.mlp.w1]}}",
            f"  - {p}.mlp.bias1: {{op: Add, inputs: [{p}.mlp.fc1, {p}.mlp.b1]}}",
            f"  - {p}.mlp.gelu: {{op: GeLU, inputs: [{p}.mlp.bias1]}}",
            f"  - {p}.mlp.scale: {{op: Scale, inputs: [{p}.mlp.gelu], scale: 0.5}}",
            f"  - {p}.mlp.fc2: {{op: MatMul, inputs: [{p}.mlp.scale, {p}.mlp.w2]}}",
            f"  - {p}.mlp.bias2: {{op: Add, inputs: [{p}.mlp.fc2, {p}.mlp.b2]}}",
            f"  - {p}.mlp.dropout: {{op: Dropout, inputs: [{p}.mlp.bias2], p: 0.1}}",
            f"  - {p}.residual2: {{op: Add, inputs: [{p}.residual1, {p}.mlp.dropout]}}",
        ]
        prev = f"{p}.residual2"
    out += [f"  head.w: {{shape: [{DIM}, {CLASSES}], init: normal}}", "operators:"]
    ops += [f"  - pool: {{op: ReduceMean, inputs: [{prev}], axis: 1}}",
            f"  - head.matmul: {{op: MatMul, inputs: [pool, head.w]}}"]
    out += ops
    out += ["output: head.matmul", "loss: softmax_cross_entropy",
            "training: {batch: 32, epochs: 1, seed: 1}", "data: {dataset: synthetic, synthetic_size: 64}", "parallel: {devices: 8}"]
    return "\n".join(out) + "\n"


def mlp(layers):
    out = [f"name: mlp{layers}", f"input: {{shape: [{DIM}]}}", f"classes: {CLASSES}", "layers:"]
    for i in range(layers):
        out += [f"  - dense{i}: {{type: Dense, in_channels: {DIM}, out_channels: {DIM}}}",
                f"  - relu{i}: ReLU"]
    out += [f"  - head: {{type: Dense, in_channels: {DIM}, out_channels: {CLASSES}}}",
            "loss: softmax_cross_entropy", "training: {batch: 32, epochs: 1, seed: 1}",
            "data: {dataset: synthetic, synthetic_size: 64}", "parallel: {devices: 8}"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("gpt", "mlp"):
        sys.exit(__doc__)
    sys.stdout.write({"gpt": gpt, "mlp": mlp}[sys.argv[1]](int(sys.argv[2])))
