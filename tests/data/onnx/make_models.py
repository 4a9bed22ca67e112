#!/usr/bin/python3
"""Writes the small ONNX files the importer's tests read (committed, so CI needs no torch).

Run with Debian's python3-torch and python3-onnx:  /usr/bin/python3 make_models.py
PyTorch exports (torch.onnx.export, seeded): mlp, mlp_view, mlp_noparams, mlp_external,
convnet, lenet (LeNet-5: tanh, average pooling), ops_mix (the elementwise, slicing and
broadcasting operators), resblock (a ResNet stem and block: strided convolutions padded as
PyTorch pads, batch statistics, pooling) and decoder (2 Llama-style layers over MNIST's rows:
RMSNorm, rotary embedding, grouped-query attention, SwiGLU; built from samples/onnx);
text_decoder (the same layers over token ids [batch, 16] with logits for the next token at
every position, trained on --data text:FILE). Built with onnx.helper: the bad files (unknown
operator, unsupported opset, inconsistent shapes) and fold (a shape subgraph written out by hand).
`--only NAME` writes one file (NAME without .onnx, torch exports only).
"""
import os

import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "samples", "onnx"))
import make_samples  # noqa: E402  (the sample architectures' layers)


def export(model, example, name, **kwargs):
    model.eval()
    torch.onnx.export(model, example, os.path.join(HERE, name), input_names=["x"],
                      output_names=["logits"], opset_version=OPSET,
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, **kwargs)
    if kwargs.get("export_params", True):
        write_reference(model, name)


def write_reference(model, name):
    """<name>.io: PyTorch's forward pass on 3 seeded examples, raw little-endian float32:
    the input [3, 1, 28, 28], then the logits [3, 10]. Batch normalisation normalises by the
    batch (train mode), as Shardscope does; nothing here draws random numbers in train mode."""
    x = torch.Generator().manual_seed(7)
    x = torch.randn(3, 1, 28, 28, generator=x)
    model.train()
    with torch.no_grad():
        y = model(x)
    with open(os.path.join(HERE, name.replace(".onnx", ".io")), "wb") as f:
        f.write(x.numpy().astype("<f4").tobytes())
        f.write(y.numpy().astype("<f4").tobytes())


class MLP(torch.nn.Module):
    """The MLP the correctness law trains: 784 -> 64 -> 10."""

    def __init__(self):
        super().__init__()
        self.flatten = torch.nn.Flatten()
        self.fc1 = torch.nn.Linear(784, 64)
        self.relu = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(self.flatten(x))))


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 2 * width)
        self.act = torch.nn.GELU()
        self.down = torch.nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.down(self.act(self.up(self.norm(x))))


class ViewMLP(torch.nn.Module):
    """x.view(x.size(0), -1) (the Shape -> Gather -> Unsqueeze -> Concat -> Reshape
    subgraph), a residual block with LayerNorm and GELU (the erf pattern), a [b, 4, 8]
    projection (MatMul of rank 3 by rank 2) and a scaled softmax."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(784, 32)
        self.layer = torch.nn.ModuleList([Block(32), Block(32)])
        self.proj = torch.nn.Linear(8, 8, bias=False)
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x):
        h = self.embed(x.view(x.size(0), -1))
        for block in self.layer:
            h = block(h)
        t = self.proj(h.view(h.size(0), 4, 8)) * 0.5
        return self.head(t.reshape(t.size(0), -1))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 4, 5, padding=2)
        self.pool = torch.nn.MaxPool2d(2)
        self.conv2 = torch.nn.Conv2d(4, 8, 5)
        self.fc = torch.nn.Linear(8 * 5 * 5, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class LeNet5(torch.nn.Module):
    """LeNet-5 as LeCun drew it: tanh and average pooling."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.pool = torch.nn.AvgPool2d(2)
        self.fc1, self.fc2 = torch.nn.Linear(16 * 5 * 5, 120), torch.nn.Linear(120, 84)
        self.fc3 = torch.nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(torch.tanh(self.conv1(x)))
        x = self.pool(torch.tanh(self.conv2(x)))
        x = torch.tanh(self.fc1(torch.flatten(x, 1)))
        return self.fc3(torch.tanh(self.fc2(x)))


class OpsMix(torch.nn.Module):
    """Split, Concat, Tanh, Sigmoid, Pow, Sqrt, Div by a tensor, Where on a folded mask, Neg,
    Reciprocal, Slice with a step, Unsqueeze, Expand, Gather of one index, Sub."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 64)
        self.fc2 = torch.nn.Linear(24, 10)

    def forward(self, x):
        h = self.fc1(torch.flatten(x, 1))
        a, b = h.split([32, 32], dim=1)
        c = torch.cat([a.tanh(), torch.sigmoid(b)], 1)
        d = c / (1 + c.pow(2)).sqrt()
        e = torch.where(torch.arange(64) < 32, d, -d)
        f = torch.reciprocal(1.5 + e) - e
        g = f[:, 2:50:2].unsqueeze(1).expand(-1, 3, -1)
        return self.fc2(g[:, 1] - g[:, 2] * 0.5)


class ResBlock(torch.nn.Module):
    """A ResNet stem (7x7 at stride 2 padded 3, max pooling 3x3 at stride 2 padded 1) and
    one bottleneck with a strided 3x3, then global average pooling."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 7, 2, 3, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.maxpool = torch.nn.MaxPool2d(3, 2, 1)
        self.block = make_samples.Bottleneck(8, 4, 2)
        self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.avgpool(self.block(x)), 1))


class Decoder(torch.nn.Module):
    """Two Llama-style layers reading MNIST's 28 rows as tokens (4 heads, 2 key/value
    groups); the last row's state classifies."""

    def __init__(self, d=32):
        super().__init__()
        self.embed = make_samples.Linear(28, d)
        self.layers = torch.nn.ModuleList(
            [make_samples.LlamaLayer(d, 4, 2, 2 * d) for _ in range(2)])
        self.norm = make_samples.RmsNorm(d)
        self.head = make_samples.Linear(d, 10)
        self.hd = d // 4

    def forward(self, x):
        x = self.embed(x.view(x.size(0), 28, 28))
        cos, sin = make_samples.rotary_tables(28, self.hd)
        mask = make_samples.causal_mask(28)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.head(self.norm(x)[:, -1])


class TextDecoder(torch.nn.Module):
    """Two Llama-style layers over token ids (a byte vocabulary of 80, 16 positions, 4 heads,
    2 key/value groups) giving next-token logits at every position: [batch, 16, 80]."""

    def __init__(self, vocab=80, tokens=16, d=32):
        super().__init__()
        self.tokens, self.hd = tokens, d // 4
        self.embed_tokens = make_samples.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList(
            [make_samples.LlamaLayer(d, 4, 2, 2 * d) for _ in range(2)])
        self.norm = make_samples.RmsNorm(d)
        self.lm_head = make_samples.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        cos, sin = make_samples.rotary_tables(self.tokens, self.hd)
        mask = make_samples.causal_mask(self.tokens)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def seeded(model, seed):
    """Random weights (the sample layers hold one number per parameter until then): matrices
    scaled by their fan-in, norm weights near one, biases near zero."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g)
            if p.dim() > 1:
                p.data = r / p.shape[0] ** 0.5
            else:
                p.data = r * 0.1 + (1.0 if name.endswith("norm.weight") else 0.0)
    return model


def torch_models(only=None):
    if only == "text_decoder" or only is None:
        # Token ids have no MNIST-shaped reference forward (.io): written without one.
        model = seeded(TextDecoder(), 7)
        model.eval()
        torch.onnx.export(model, torch.zeros(2, 16, dtype=torch.long),
                          os.path.join(HERE, "text_decoder.onnx"), input_names=["ids"],
                          output_names=["logits"], opset_version=OPSET,
                          dynamic_axes={"ids": {0: "batch"}, "logits": {0: "batch"}})
    if only is not None:
        return
    example = torch.zeros(2, 1, 28, 28)
    torch.manual_seed(0)
    export(MLP(), example, "mlp.onnx")
    torch.manual_seed(0)
    export(MLP(), example, "mlp_noparams.onnx", export_params=False)
    torch.manual_seed(1)
    export(ViewMLP(), example, "mlp_view.onnx")
    torch.manual_seed(2)
    export(ConvNet(), example, "convnet.onnx")
    torch.manual_seed(3)
    export(LeNet5(), example, "lenet.onnx")
    torch.manual_seed(4)
    export(OpsMix(), example, "ops_mix.onnx")
    torch.manual_seed(5)
    # Exported in training mode: in eval mode the exporter folds batch norm into the conv.
    export(ResBlock(), example, "resblock.onnx", training=torch.onnx.TrainingMode.TRAINING)
    export(seeded(Decoder(), 6), example, "decoder.onnx")
    # The MLP again, its weights in mlp_external.onnx.data.
    model = onnx.load(os.path.join(HERE, "mlp.onnx"))
    data = os.path.join(HERE, "mlp_external.onnx.data")
    if os.path.exists(data):  # onnx appends to an existing data file
        os.remove(data)
    onnx.save_model(model, os.path.join(HERE, "mlp_external.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="mlp_external.onnx.data",
                    size_threshold=0)


def save(graph, name, opset=OPSET):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="make_models.py")
    onnx.save(model, os.path.join(HERE, name))


def weight(name, shape, seed):
    values = np.random.default_rng(seed).normal(0, 0.05, shape).astype(np.float32)
    return helper.make_tensor(name, TensorProto.FLOAT, shape, values.flatten().tolist())


def helper_models():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 28, 28])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])
    flat = helper.make_node("Flatten", ["x"], ["flat"], name="/flatten/Flatten")
    # A shape subgraph by hand: [batch, 784] -> [batch, 16, 49] -> [batch, 784].
    fold_nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="/view/Shape"),
        helper.make_node("Constant", [], ["zero"], name="/view/Constant",
                         value=helper.make_tensor("z", TensorProto.INT64, [], [0])),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="/view/Gather", axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"], name="/view/Unsqueeze"),
        helper.make_node("Concat", ["batch1", "rest"], ["target"], name="/view/Concat", axis=0),
        helper.make_node("Reshape", ["flat", "target"], ["grid"], name="/view/Reshape"),
        helper.make_node("Reshape", ["grid", "back"], ["flat2"], name="/view/Reshape_1"),
        helper.make_node("MatMul", ["flat2", "w"], ["logits"], name="/head/MatMul"),
    ]
    inits = [helper.make_tensor("axes", TensorProto.INT64, [1], [0]),
             helper.make_tensor("rest", TensorProto.INT64, [2], [16, 49]),
             helper.make_tensor("back", TensorProto.INT64, [2], [0, -1]),
             weight("w", [784, 10], 3)]
    save(helper.make_graph([flat] + fold_nodes, "fold", [x], [y], inits), "fold.onnx")

    top = helper.make_node("TopK", ["flat", "k"], ["logits", "idx"], name="/head/TopK")
    save(helper.make_graph([flat, top], "unknown_op", [x], [y],
                           [helper.make_tensor("k", TensorProto.INT64, [1], [10])]),
         "unknown_op.onnx")

    mm = helper.make_node("MatMul", ["flat", "w"], ["logits"], name="/fc/MatMul")
    # Written with ONNX's own writer: its checker would refuse opset 99 on saving too.
    bad = helper.make_model(helper.make_graph([flat, mm], "bad_opset", [x], [y],
                                              [weight("w", [784, 10], 4)]),
                            opset_imports=[helper.make_opsetid("", 99)])
    with open(os.path.join(HERE, "bad_opset.onnx"), "wb") as f:
        f.write(bad.SerializeToString())

    # The mappings no PyTorch export above uses: Squeeze, Dropout, ReduceSum, Cast, Size,
    # LogSoftmax.
    misc_nodes = [
        helper.make_node("Unsqueeze", ["flat", "axes"], ["flat3"], name="/misc/Unsqueeze"),
        helper.make_node("Squeeze", ["flat3", "axes"], ["flat2"], name="/misc/Squeeze"),
        helper.make_node("MatMul", ["flat2", "w"], ["h"], name="/misc/MatMul"),
        helper.make_node("Dropout", ["h", "ratio"], ["d"], name="/misc/Dropout"),
        helper.make_node("ReduceSum", ["d", "axes"], ["s"], name="/misc/ReduceSum"),
        helper.make_node("Cast", ["s"], ["si"], name="/misc/Cast", to=TensorProto.INT32),
        helper.make_node("Cast", ["si"], ["sf"], name="/misc/Cast_1", to=TensorProto.FLOAT),
        helper.make_node("Sub", ["d", "sf"], ["c"], name="/misc/Sub"),
        helper.make_node("Size", ["flat"], ["n"], name="/misc/Size"),
        helper.make_node("Cast", ["n"], ["nf"], name="/misc/Cast_2", to=TensorProto.FLOAT),
        helper.make_node("Div", ["c", "nf"], ["cn"], name="/misc/Div"),
        helper.make_node("LogSoftmax", ["cn"], ["logits"], name="/misc/LogSoftmax", axis=-1),
    ]
    save(helper.make_graph([flat] + misc_nodes, "misc", [x], [y],
                           [helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
                            helper.make_tensor("ratio", TensorProto.FLOAT, [], [0.1]),
                            weight("w", [784, 10], 6)]), "misc.onnx")

    mm_bad = helper.make_node("MatMul", ["flat", "w"], ["logits"], name="/fc/MatMul")
    save(helper.make_graph([flat, mm_bad], "bad_shapes", [x], [y], [weight("w", [100, 10], 5)]),
         "bad_shapes.onnx")


if __name__ == "__main__":
    ONLY = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    torch_models(ONLY)
    if ONLY is None:
        helper_models()
    for f in sorted(os.listdir(HERE)):
        if f.endswith(".onnx"):
            onnx_model = onnx.load(os.path.join(HERE, f), load_external_data=False)
            print(f, os.path.getsize(os.path.join(HERE, f)), "bytes,",
                  len(onnx_model.graph.node), "nodes")
