#!/usr/bin/python3
"""Writes the architectures of samples/onnx: structure only, exported without parameters.

Run with Debian's python3-torch and python3-onnx (torch.onnx.export, opset 17):
    /usr/bin/python3 samples/onnx/make_samples.py [OUT_DIR] [--only NAME]
Every weight becomes a graph input without data (export_params=False), so each file holds
the graph alone; Shardscope gives such weights its seeded initialisers. Masks and rotary
tables are computed from the input's shape inside the graph, so no buffer holds data either.
The exporter copies every parameter while converting, so the Llama decoder is traced with
one layer and the file then repeats that layer's nodes (renamed /layers.i/, as a traced
32-layer model names them).

    gpt2.onnx       GPT-2 small: 12 layers, 768 wide, 12 heads, 1024 tokens, vocab 50257
    llama.onnx      Llama-style: 32 layers, 4096 wide, 32 heads, 8 key/value groups
                    (grouped-query attention), RMSNorm, rotary embedding, SwiGLU 14336,
                    vocab 32000, 2048 tokens (the 7B-class shapes)
    llama_small.onnx  the same decoder, 2 layers (quick tests)
    resnet50.onnx   ResNet-50 (bottleneck blocks 3, 4, 6, 3) on 224x224 images
    vit_b16.onnx    ViT-B/16: 16x16 patches of 224x224 images, 12 layers, 768 wide, 12 heads

The decoders read token ids [batch, tokens] and return the next-token logits of the last
position [batch, vocab] (Shardscope's classifier loss reads [batch, classes]).
"""
import math
import os
import sys

import onnx
import torch
from torch import nn

OPSET = 17


_PARAMS = [0]


def param(*shape):
    """A parameter of `shape` that holds one number: the export keeps only its shape, and a
    7B-parameter architecture then traces in little memory. Each holds its own number: the
    exporter merges parameters of equal value into one (weight tying)."""
    _PARAMS[0] += 1
    return nn.Parameter(torch.full((), 0.02 + 1e-6 * _PARAMS[0]).expand(*shape))


class Embedding(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.weight = param(vocab, d)

    def forward(self, ids):
        return nn.functional.embedding(ids, self.weight)


class Linear(nn.Module):
    """x @ W with W [in, out] (GPT-2's Conv1D layout): one MatMul node per projection."""

    def __init__(self, d_in, d_out, bias=True):
        super().__init__()
        self.weight = param(d_in, d_out)
        self.bias = param(d_out) if bias else None

    def forward(self, x):
        y = x @ self.weight
        return y + self.bias if self.bias is not None else y


def causal_mask(t):
    """True above the diagonal (future positions), from the sequence length."""
    i = torch.arange(t)
    return i[None, :] > i[:, None]


# ---------------------------------------------------------------- GPT-2


class GptAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj = Linear(d, d), Linear(d, d), Linear(d, d)
        self.o_proj = Linear(d, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        hd = d // self.heads
        q = self.q_proj(x).view(b, t, self.heads, hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.heads, hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.heads, hd).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        attn = scores.masked_fill(mask, float("-inf")).softmax(-1)
        return self.o_proj((attn @ v).transpose(1, 2).reshape(b, t, d))


class GptMlp(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc, self.proj = Linear(d, 4 * d), Linear(4 * d, d)
        self.act = nn.GELU()

    def forward(self, x):
        return self.proj(self.act(self.fc(x)))


class GptBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn, self.mlp = GptAttention(d, heads), GptMlp(d)

    def forward(self, x, mask):
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))


class Gpt2(nn.Module):
    def __init__(self, layers=12, d=768, heads=12, vocab=50257, tokens=1024):
        super().__init__()
        self.wte, self.wpe = Embedding(vocab, d), Embedding(tokens, d)
        self.h = nn.ModuleList([GptBlock(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = Linear(d, vocab, bias=False)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t))
        mask = causal_mask(t)
        for block in self.h:
            x = block(x, mask)
        return self.lm_head(self.ln_f(x)[:, -1])


# ---------------------------------------------------------------- Llama


class RmsNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = param(d)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary_tables(t, hd, base=10000.0):
    """cos and sin [t, hd] of the rotary embedding, from the sequence length."""
    inv_freq = 1.0 / (base ** (torch.arange(0, hd, 2).float() / hd))
    freqs = torch.arange(t).float()[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.q_proj = Linear(d, heads * self.hd, bias=False)
        self.k_proj = Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = Linear(heads * self.hd, d, bias=False)

    def repeat_kv(self, x):
        """[b, kv, t, hd] -> [b, heads, t, hd]: each key/value group serves heads/kv heads."""
        b, kv, t, hd = x.shape
        rep = self.heads // kv
        return x[:, :, None, :, :].expand(b, kv, rep, t, hd).reshape(b, kv * rep, t, hd)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        attn = scores.masked_fill(mask, float("-inf")).softmax(-1)
        return self.o_proj((attn @ v).transpose(1, 2).reshape(b, t, -1))


class SwiGlu(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate_proj = Linear(d, hidden, bias=False)
        self.up_proj = Linear(d, hidden, bias=False)
        self.down_proj = Linear(hidden, d, bias=False)

    def forward(self, x):
        g = self.gate_proj(x)
        return self.down_proj(g * torch.sigmoid(g) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, d, heads, kv_heads, hidden):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RmsNorm(d), RmsNorm(d)
        self.self_attn = LlamaAttention(d, heads, kv_heads)
        self.mlp = SwiGlu(d, hidden)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    def __init__(self, layers=32, d=4096, heads=32, kv_heads=8, hidden=14336, vocab=32000):
        super().__init__()
        self.embed_tokens = Embedding(vocab, d)
        self.layers = nn.ModuleList(
            [LlamaLayer(d, heads, kv_heads, hidden) for _ in range(layers)])
        self.norm = RmsNorm(d)
        self.lm_head = Linear(d, vocab, bias=False)
        self.hd = d // heads

    def forward(self, ids):
        t = ids.shape[1]
        x = self.embed_tokens(ids)
        cos, sin = rotary_tables(t, self.hd)
        mask = causal_mask(t)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x)[:, -1])


# ---------------------------------------------------------------- ResNet-50


class Bottleneck(nn.Module):
    def __init__(self, c_in, width, stride):
        super().__init__()
        c_out = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(c_in, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, c_out, 1, bias=False), nn.BatchNorm2d(c_out)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                            nn.BatchNorm2d(c_out))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return torch.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages, c_in = [], 64
        for i, (blocks, width) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)]):
            layer = []
            for j in range(blocks):
                layer.append(Bottleneck(c_in, width, 2 if j == 0 and i > 0 else 1))
                c_in = 4 * width
            stages.append(nn.Sequential(*layer))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---------------------------------------------------------------- ViT-B/16


class VitAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = Linear(d, d), Linear(d, d), Linear(d, d)
        self.out = Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads
        q = self.query(x).view(b, t, self.heads, hd).transpose(1, 2)
        k = self.key(x).view(b, t, self.heads, hd).transpose(1, 2)
        v = self.value(x).view(b, t, self.heads, hd).transpose(1, 2)
        attn = ((q @ k.transpose(-2, -1)) / math.sqrt(hd)).softmax(-1)
        return self.out((attn @ v).transpose(1, 2).reshape(b, t, d))


class VitBlock(nn.Module):
    def __init__(self, d, heads, hidden):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = VitAttention(d, heads)
        self.mlp = nn.Sequential(Linear(d, hidden), nn.GELU(), Linear(hidden, d))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class VitB16(nn.Module):
    def __init__(self, layers=12, d=768, heads=12, hidden=3072, patch=16, image=224,
                 classes=1000):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, d, patch, patch)
        self.cls_token = param(1, 1, d)
        self.pos_embed = param(1, (image // patch) ** 2 + 1, d)
        self.blocks = nn.ModuleList([VitBlock(d, heads, hidden) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = Linear(d, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


# ---------------------------------------------------------------- export


def export(model, example, path, tokens=None, layers=None, training=False):
    """Traces at batch 1; a decoder traces 8 tokens with the token axis symbolic, which the
    file then fixes to `tokens` (every shape in the graph is computed from the input's)."""
    for module in model.modules():  # torch's own layers too (LayerNorm's ones would merge)
        for name, p in list(module._parameters.items()):
            if p is not None:
                module._parameters[name] = param(*p.shape)
    model.eval()
    axes = {0: "batch", 1: "tokens"} if tokens else {0: "batch"}
    # Training mode keeps BatchNormalization (in eval mode the exporter folds it into Conv).
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    with torch.no_grad():
        torch.onnx.export(model, example, path, export_params=False, opset_version=OPSET,
                          input_names=["x"], output_names=["logits"], training=mode,
                          dynamic_axes={"x": axes, "logits": {0: "batch"}})
    m = onnx.load(path)
    if tokens:
        m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = tokens
    if layers:
        repeat_layer(m, "layers", layers)
    del m.graph.value_info[:]  # intermediate shapes: Shardscope infers them at import
    onnx.checker.check_model(m)
    onnx.save(m, path)
    print(f"{os.path.basename(path)}: {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes")


def repeat_layer(m, prefix, n):
    """Repeats the nodes of layer 0 (named /<prefix>.0/...) n - 1 times after it, chaining
    each copy's input to the previous copy's output, with its own weight inputs."""
    g = m.graph
    nodes = list(g.node)
    inside = [k for k, nd in enumerate(nodes) if nd.name.startswith(f"/{prefix}.0/")]
    first, last = inside[0], inside[-1]
    layer = [nodes[k] for k in inside]
    produced = {o for nd in layer for o in nd.output}
    consumed_after = {i for nd in nodes[last + 1:] for i in nd.input}
    (out,) = [o for o in produced if o in consumed_after]
    # The layer's input: what its first norm reads (cos, sin and the mask are shared).
    weights = {i.name for i in g.input[1:]}
    norm = [nd for nd in layer if nd.name.startswith(f"/{prefix}.0/input_layernorm/")]
    entry = [i for nd in norm for i in nd.input if i not in produced and i not in weights][0]
    inputs = {i.name: i for i in g.input}
    copies, prev = [], out
    for i in range(1, n):
        rename = lambda v: (v.replace(f"/{prefix}.0/", f"/{prefix}.{i}/")
                            if f"/{prefix}.0/" in v else f"{v}__{prefix}{i}")
        for nd in layer:
            c = onnx.NodeProto()
            c.CopyFrom(nd)
            c.name = nd.name.replace(f"/{prefix}.0/", f"/{prefix}.{i}/")
            for k, v in enumerate(nd.input):
                if v == entry:
                    c.input[k] = prev
                elif v in produced:
                    c.input[k] = rename(v)
                elif v.startswith(f"{prefix}.0."):
                    w = v.replace(f"{prefix}.0.", f"{prefix}.{i}.", 1)
                    c.input[k] = w
                    if w not in inputs:
                        inputs[w] = onnx.ValueInfoProto()
                        inputs[w].CopyFrom(inputs[v])
                        inputs[w].name = w
                        g.input.append(inputs[w])
            for k, v in enumerate(nd.output):
                c.output[k] = rename(v)
            copies.append(c)
        prev = rename(out)
    for nd in nodes[last + 1:]:
        for k, v in enumerate(nd.input):
            if v == out:
                nd.input[k] = prev
    del g.node[:]
    g.node.extend(nodes[:last + 1] + copies + nodes[last + 1:])


def models():
    ids = torch.zeros(1, 8, dtype=torch.long)
    image = torch.zeros(1, 3, 224, 224)
    return {
        "gpt2": (lambda: Gpt2(), ids, 1024, None, False),
        "llama": (lambda: Llama(layers=1), ids, 2048, 32, False),
        "llama_small": (lambda: Llama(layers=1), ids, 2048, 2, False),
        "resnet50": (lambda: ResNet50(), image, None, None, True),
        "vit_b16": (lambda: VitB16(), image, None, None, False),
    }


def main(argv):
    out = os.path.dirname(os.path.abspath(__file__))
    only = None
    args = list(argv)
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1]
        del args[i:i + 2]
    if args:
        out = args[0]
    os.makedirs(out, exist_ok=True)
    for name, (make, example, tokens, layers, training) in models().items():
        if only is None or name == only:
            export(make(), example, os.path.join(out, name + ".onnx"), tokens, layers, training)


if __name__ == "__main__":
    main(sys.argv[1:])
