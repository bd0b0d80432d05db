"""Writes the reference fixtures of resnet_test.go with PyTorch/torchvision (Debian's
python3-torch 1.13 and python3-torchvision 0.14):  /usr/bin/python3 gen.py

resnet50_formula_features.f64: the pooled 2048-d features (float64, little-endian, 3×2048,
  row-major) of torchvision.models.resnet50() in eval mode, computed in float64, with every
  tensor of its state dict filled by formula() below, for the three 3×72×56 images of
  images() below. resnet_test.go computes the same weights and images in Go.
state_dict.pth: a small state dict saved by torch.save (zip format) exercising the pickle
  reader: float32/float64/float16/bfloat16 tensors, a transposed (non-contiguous) view, two
  views of one storage at different offsets, an nn.Parameter and an int64 scalar.
"""
import math

import torch
import torchvision


def name_hash(name):
    h = 0
    for c in name.encode():
        h = (h * 131 + c) % 1000003
    return h


def formula(name, shape):
    """The deterministic value of element k (row-major) of state-dict tensor `name`."""
    phase = 2 * math.pi * name_hash(name) / 1000003
    n = math.prod(shape)
    if name.endswith("running_var"):
        f = lambda k: 0.8 + 0.2 * (1 + math.sin(0.5 * k + phase))
    elif name.endswith("running_mean"):
        f = lambda k: 0.1 * math.sin(1.1 * k + phase)
    elif name.endswith("num_batches_tracked"):
        f = lambda k: 0.0
    elif len(shape) == 1 and name.endswith("weight"):  # batch-norm scale
        f = lambda k: 0.6 + 0.3 * math.sin(1.3 * k + phase)
    elif len(shape) == 1:  # biases
        f = lambda k: 0.1 * math.sin(0.9 * k + phase)
    else:  # convolution and fc weights: amplitude 2/sqrt(fan_in), He-like scale
        fan_in = math.prod(shape[1:])
        f = lambda k: 2 / math.sqrt(fan_in) * math.sin(0.7 * k + phase)
    return torch.tensor([f(k) for k in range(n)], dtype=torch.float64).reshape(shape)


def images():
    n, c, h, w = 3, 3, 72, 56
    i = torch.arange(n * c * h * w, dtype=torch.float64)
    return (2 * torch.sin(0.37 * i) + torch.cos(0.011 * i)).reshape(n, c, h, w)


model = torchvision.models.resnet50().double().eval()
state = {k: formula(k, tuple(v.shape)).to(v.dtype) for k, v in model.state_dict().items()}
model.load_state_dict(state)
model.fc = torch.nn.Identity()
with torch.no_grad():
    feats = model(images())
assert feats.shape == (3, 2048)
feats.numpy().astype("<f8").tofile("resnet50_formula_features.f64")
print("features: mean %.6g, std %.6g, min %.6g, max %.6g" % (feats.mean(), feats.std(), feats.min(), feats.max()))

base = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 4
shared = torch.arange(10, dtype=torch.float32) - 3
sd = {
    "a.weight": base,
    "a.transposed": base.t(),
    "b.double": torch.tensor([[1.5, -2.25]], dtype=torch.float64),
    "b.half": torch.tensor([0.5, -3.0, 65504.0], dtype=torch.float16),
    "b.bfloat": torch.tensor([1.0, -0.15625], dtype=torch.bfloat16),
    "c.view1": shared[2:5],
    "c.view2": shared[6:10].reshape(2, 2),
    "d.param": torch.nn.Parameter(torch.tensor([7.0, 8.0])),
    "bn.num_batches_tracked": torch.tensor(42, dtype=torch.int64),
}
torch.save(sd, "state_dict.pth")
