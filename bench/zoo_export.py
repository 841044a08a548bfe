"""Exports the zoo: ONNX files that the real exporters write (`torch.onnx.export`, opset 17, static
shapes, TorchScript exporter) of torchvision and transformers models with seeded random weights;
nothing is fetched from a model hub (torchvision with weights=None, transformers from a Config).

Needs the `zoo` extra (`pip install -e '.[zoo]'`); bench/zoo.py imports, builds and times them.

    python bench/zoo_export.py [--out DIR] [--only NAME ...]

writes DIR/NAME.onnx for each model and DIR/README.txt listing the files, their inputs and outputs.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import onnx
import torch
import torchvision.models as tvm
from torch import nn

OPSET = 17
SEED = 0
DEFAULT_OUT = Path("/work/zoo-models")


@dataclass(frozen=True)
class ZooModel:
    """One zoo entry: how to build the torch module, its example inputs and their ONNX names."""

    name: str
    description: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...] = ("output",)


def image() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 3, 224, 224),)


def tokens(seq: int, vocab: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    """Token ids and an attention mask (the export of a model called without a mask traces
    transformers' packed-sequence check, whose aten::diff torch.onnx cannot export)."""

    def make() -> tuple[torch.Tensor, ...]:
        ids = torch.randint(0, vocab, (1, seq), dtype=torch.int64)
        attention = torch.ones(1, seq, dtype=torch.int64)
        attention[0, seq - seq // 4 :] = 0  # padded tail, so the mask matters
        return (ids, attention)

    return make


class HiddenOnly(nn.Module):
    """A transformers model whose ONNX output is the last hidden state alone (no cache, no dict)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        names = ("input_ids", "attention_mask")
        return self.model(**dict(zip(names, args)), return_dict=True).last_hidden_state


def bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    return HiddenOnly(BertModel(BertConfig(), add_pooling_layer=False))


def distilbert() -> nn.Module:
    from transformers import DistilBertConfig, DistilBertModel

    return HiddenOnly(DistilBertModel(DistilBertConfig()))


def gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2Model

    return HiddenOnly(GPT2Model(GPT2Config(use_cache=False)))


class SpeechLSTM(nn.Module):
    """A small voice-activity-like model: 2-layer LSTM over 40 features, then a per-frame score."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_size=40, hidden_size=64, num_layers=2, batch_first=True)
        self.head = nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(x)
        return torch.sigmoid(self.head(y))


class SpeechGRU(nn.Module):
    """A bidirectional GRU over 40 features, then a per-frame linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(input_size=40, hidden_size=48, num_layers=1, batch_first=True, bidirectional=True)
        self.head = nn.Linear(96, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.gru(x)
        return self.head(y)


def conv_block(cin: int, cout: int, stride: int = 1) -> nn.Module:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout), nn.ReLU())


class TinyUNet(nn.Module):
    """A small FPN/UNet-like segmentation net: strided encoder, decoder with nearest and bilinear
    Resize (both modes torch exports), a ConvTranspose, skip concatenations."""

    def __init__(self) -> None:
        super().__init__()
        self.e1, self.e2, self.e3 = conv_block(3, 16), conv_block(16, 32, 2), conv_block(32, 64, 2)
        self.lat2 = nn.Conv2d(32, 32, 1)
        self.up3 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.d2 = conv_block(64, 32)
        self.d1 = conv_block(48, 16)
        self.head = nn.Conv2d(16, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f1 = self.e1(x)
        f2 = self.e2(f1)
        f3 = self.e3(f2)
        p3 = self.up3(f3) + nn.functional.interpolate(f3[:, :32], scale_factor=2.0, mode="nearest")
        d2 = self.d2(torch.cat([p3, self.lat2(f2)], dim=1))
        up = nn.functional.interpolate(d2, scale_factor=2.0, mode="bilinear", align_corners=False)
        d1 = self.d1(torch.cat([up, f1], dim=1))
        return self.head(d1)


def tv(factory: Callable[..., nn.Module]) -> Callable[[], nn.Module]:
    return lambda: factory(weights=None)


ZOO: tuple[ZooModel, ...] = (
    ZooModel("resnet18", "torchvision ResNet-18", tv(tvm.resnet18), image, ("input",)),
    ZooModel("resnet50", "torchvision ResNet-50", tv(tvm.resnet50), image, ("input",)),
    ZooModel("mobilenet_v2", "torchvision MobileNetV2", tv(tvm.mobilenet_v2), image, ("input",)),
    ZooModel("mobilenet_v3_large", "torchvision MobileNetV3-large", tv(tvm.mobilenet_v3_large), image, ("input",)),
    ZooModel("efficientnet_b0", "torchvision EfficientNet-B0", tv(tvm.efficientnet_b0), image, ("input",)),
    ZooModel("squeezenet1_1", "torchvision SqueezeNet 1.1", tv(tvm.squeezenet1_1), image, ("input",)),
    ZooModel("shufflenet_v2", "torchvision ShuffleNetV2 x1.0", tv(tvm.shufflenet_v2_x1_0), image, ("input",)),
    ZooModel("convnext_tiny", "torchvision ConvNeXt-tiny", tv(tvm.convnext_tiny), image, ("input",)),
    ZooModel("regnet_y_400mf", "torchvision RegNetY-400MF", tv(tvm.regnet_y_400mf), image, ("input",)),
    ZooModel("densenet121", "torchvision DenseNet-121", tv(tvm.densenet121), image, ("input",)),
    ZooModel("vit_b_16", "torchvision ViT-B/16", tv(tvm.vit_b_16), image, ("input",)),
    ZooModel(
        "bert_base",
        "transformers BERT-base encoder, seq 128 (last hidden state)",
        bert,
        tokens(128, 30522),
        ("input_ids", "attention_mask"),
        ("last_hidden_state",),
    ),
    ZooModel(
        "distilbert",
        "transformers DistilBERT-base, seq 128 (last hidden state)",
        distilbert,
        tokens(128, 30522),
        ("input_ids", "attention_mask"),
        ("last_hidden_state",),
    ),
    ZooModel(
        "gpt2",
        "transformers GPT-2 small, seq 64, no cache, input_ids + attention_mask (last hidden state)",
        gpt2,
        tokens(64, 50257),
        ("input_ids", "attention_mask"),
        ("last_hidden_state",),
    ),
    ZooModel(
        "lstm",
        "2-layer LSTM (40->64) over 100 frames + linear + sigmoid",
        SpeechLSTM,
        lambda: (torch.randn(1, 100, 40),),
        ("features",),
    ),
    ZooModel(
        "gru",
        "bidirectional GRU (40->48) over 100 frames + linear",
        SpeechGRU,
        lambda: (torch.randn(1, 100, 40),),
        ("features",),
    ),
    ZooModel(
        "unet",
        "small UNet/FPN: ConvTranspose, nearest and bilinear Resize, Concat",
        TinyUNet,
        lambda: (torch.randn(1, 3, 128, 128),),
        ("input",),
    ),
)


def calibrate(module: nn.Module, inputs: Callable[[], tuple[torch.Tensor, ...]]) -> nn.Module:
    """Seeded weights whose outputs are not ~0, so that checking an import against onnxruntime
    at atol 1e-4 means something: the library inits leave some outputs at 1e-9 (MobileNets,
    EfficientNet: activations shrink layer by layer) or exactly 0 (ViT's zero-initialised
    head). Weights that are all zero get normal(0, 0.02); every batch norm's running statistics
    become those of its input on a few random batches (cumulative average), so each layer
    sees unit-scale data."""
    with torch.no_grad():
        for param in module.parameters():
            if param.dim() >= 2 and not param.any():
                param.normal_(0.0, 0.02)
        norms = [m for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
        if norms:
            for norm in norms:
                norm.reset_running_stats()
                norm.momentum = None  # the cumulative average of every batch seen
            module.train()
            for _ in range(4):
                module(*inputs())
    return module.eval()


def export(model: ZooModel, out: Path) -> Path:
    """Exports one model with seeded, calibrated weights (random inputs seeded too), checks
    the file, and moves it into place (other processes may be reading the previous one)."""
    torch.manual_seed(SEED)
    module = calibrate(model.build(), model.inputs)
    args = model.inputs()
    path = out / f"{model.name}.onnx"
    partial = out / f".{model.name}.onnx.partial"
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            args,
            str(partial),
            input_names=list(model.input_names),
            output_names=list(model.output_names),
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    onnx.checker.check_model(str(partial), full_check=True)
    partial.replace(path)
    return path


def describe(path: Path) -> str:
    """One README line: the file, its inputs and outputs with their types and shapes, its ops."""
    proto = onnx.load(str(path), load_external_data=False)

    def value(v: onnx.ValueInfoProto) -> str:
        t = v.type.tensor_type
        dims = "x".join(str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?" for d in t.shape.dim)
        return f"{v.name}:{onnx.TensorProto.DataType.Name(t.elem_type).lower()}[{dims}]"

    ops = sorted({n.op_type for n in proto.graph.node})
    inputs = ", ".join(value(v) for v in proto.graph.input)
    outputs = ", ".join(value(v) for v in proto.graph.output)
    return (
        f"{path.name}  ({path.stat().st_size / 1e6:.1f} MB)\n  in: {inputs}\n  out: {outputs}\n  ops: {' '.join(ops)}"
    )


def write_readme(out: Path) -> None:
    """README.txt in the zoo folder: every model file there, what it is, its inputs and ops."""
    known = {m.name: m.description for m in ZOO}
    lines = [
        "ONNX models exported by xrelay's bench/zoo_export.py (torch.onnx.export, opset 17, static",
        f"shapes, dynamo=False, seeded random weights, seed {SEED}, batch norms calibrated on random",
        f"batches so outputs are unit-scale; torch {torch.__version__}).",
        "Regenerate with: .venv/bin/python bench/zoo_export.py --out DIR",
        "",
    ]
    for path in sorted(out.glob("*.onnx")):
        lines += [f"{known.get(path.stem, '(not in the zoo list)')}", describe(path), ""]
    (out / "README.txt").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", nargs="*", default=None, help="model names (default: all)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    # nn.MultiheadAttention's inference fast path (ViT) is one aten op that torch.onnx cannot export.
    torch.backends.mha.set_fastpath_enabled(False)
    failed: list[str] = []
    for model in ZOO:
        if args.only and model.name not in args.only:
            continue
        try:
            print(f"{model.name}: {export(model, args.out)}", flush=True)
        except Exception as error:  # a row of the report, not a crash: the other models still export
            failed.append(model.name)
            print(f"{model.name}: FAILED {type(error).__name__}: {error}", file=sys.stderr, flush=True)
    write_readme(args.out)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
