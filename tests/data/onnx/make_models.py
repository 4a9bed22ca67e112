#!/usr/bin/python3
"""Writes the small ONNX files the importer's tests read (committed, so CI needs no torch).

Run with Debian's python3-torch and python3-onnx:  /usr/bin/python3 make_models.py
PyTorch exports (torch.onnx.export, seeded): mlp, mlp_view, mlp_noparams, mlp_external,
convnet. Built with onnx.helper: the bad files (unknown operator, unsupported opset,
inconsistent shapes) and fold (a shape subgraph written out by hand).
"""
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17


def export(model, example, name, **kwargs):
    model.eval()
    torch.onnx.export(model, example, os.path.join(HERE, name), input_names=["x"],
                      output_names=["logits"], opset_version=OPSET,
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, **kwargs)
    if kwargs.get("export_params", True):
        write_reference(model, name)


def write_reference(model, name):
    """<name>.io: PyTorch's forward pass on 3 seeded examples, raw little-endian float32:
    the input [3, 1, 28, 28], then the logits [3, 10]."""
    x = torch.Generator().manual_seed(7)
    x = torch.randn(3, 1, 28, 28, generator=x)
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


def torch_models():
    example = torch.zeros(2, 1, 28, 28)
    torch.manual_seed(0)
    export(MLP(), example, "mlp.onnx")
    torch.manual_seed(0)
    export(MLP(), example, "mlp_noparams.onnx", export_params=False)
    torch.manual_seed(1)
    export(ViewMLP(), example, "mlp_view.onnx")
    torch.manual_seed(2)
    export(ConvNet(), example, "convnet.onnx")
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

    mm_bad = helper.make_node("MatMul", ["flat", "w"], ["logits"], name="/fc/MatMul")
    save(helper.make_graph([flat, mm_bad], "bad_shapes", [x], [y], [weight("w", [100, 10], 5)]),
         "bad_shapes.onnx")


if __name__ == "__main__":
    torch_models()
    helper_models()
    for f in sorted(os.listdir(HERE)):
        if f.endswith(".onnx"):
            onnx_model = onnx.load(os.path.join(HERE, f), load_external_data=False)
            print(f, os.path.getsize(os.path.join(HERE, f)), "bytes,",
                  len(onnx_model.graph.node), "nodes")
