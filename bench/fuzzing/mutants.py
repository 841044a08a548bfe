"""
Mutants: generated programs, at some stage of the pipeline, broken a little, through opt-tool.

    outcome = check_mutant(seed, index, workdir)

A mutant starts from a generated program (`programs.generate`), printed as written, in the
generic form, or after plan-devices, fuse-ops or convert-relay-to-loops, so that every
pass and emitter sees broken input of its own stage. One to four mutations apply:
token swaps, replacements and deletions, deleted, duplicated, moved and shuffled lines,
wrong types, wrong or missing attributes and scopes, renamed ops, lines from another
program, huge sizes, truncation and stray characters. It then runs through a random opt-tool
pipeline for its stage (`main` in this process; one in `subprocess_rate` also as a real
`opt-tool` process), and one in `api_rate` also through the API (parse, interpret, build,
run; see `checks.check_api`).
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzzing import checks, programs

# --- tokens -----------------------------------------------------------------------------------

TOKEN = re.compile(
    r"""
    "(?:[^"\\]|\\.)*"                      # a string
    | %[\w$.#-]+ | @[\w$.-]+ | \^[\w$.-]+   # values, symbols, blocks
    | \#[\w.]+                              # an attribute name (#relay.se_scope)
    | -?0x[0-9a-fA-F]+ | -?\d+\.\d*(?:e[-+]?\d+)? | -?\d+(?:e[-+]?\d+)?
    | [A-Za-z_][\w.$]*                      # identifiers, keywords, op names
    | -> | \S                                # punctuation
    """,
    re.X,
)

RELAY_OPS = [
    "relay.negative", "relay.exp", "relay.log", "relay.sqrt", "relay.rsqrt", "relay.tanh",
    "relay.sigmoid", "relay.abs", "relay.erf", "relay.nn.relu", "relay.clip", "relay.add",
    "relay.subtract", "relay.multiply", "relay.divide", "relay.maximum", "relay.minimum",
    "relay.power", "relay.nn.bias_add", "relay.reshape", "relay.transpose", "relay.squeeze",
    "relay.expand_dims", "relay.broadcast_to", "relay.strided_slice", "relay.concatenate",
    "relay.sum", "relay.mean", "relay.max", "relay.min", "relay.nn.dense",
    "relay.nn.batch_matmul", "relay.nn.conv2d", "relay.nn.max_pool2d", "relay.nn.avg_pool2d",
    "relay.nn.global_avg_pool2d", "relay.nn.softmax", "relay.nn.matmul", "relay.nn.layer_norm",
    "relay.nn.leaky_relu", "relay.nn.pad", "relay.take", "relay.constant", "relay.on_device",
    "relay.device_copy", "relay.fused", "relay.yield", "relay.launch", "relay.bogus",
    "func.call", "func.return", "func.func", "builtin.module", "arith.addf", "memref.load",
    "scf.for", "scf.parallel", "test.op",
]  # fmt: skip
ATTR_KEYS = [
    "axis", "axes", "keepdims", "begin", "end", "strides", "padding", "dilation", "groups",
    "pool_size", "num_newaxis", "a_min", "a_max", "value", "epsilon", "alpha", "pad_width",
    "pad_value", "pad_mode", "indices", "se_scope", "src_se_scope",
    "dst_se_scope", "constrain_body", "constrain_result", "kernel_name", "callee",
    "relay.se_scope", "relay.storage_id", "sym_name", "function_type", "bogus",
]  # fmt: skip
ATTR_VALUES = [
    "0 : i64", "-1 : i64", "7 : i64", "-9 : i64", "9223372036854775807 : i64", "1 : i32",
    "1 : i128", "true", "false", "unit", "0.0 : f32", "1.5e+38 : f32", "-1.0 : f32", "1 : i1",
    "array<i64>", "array<i64: 0>", "array<i64: -1>", "array<i64: 1, 0>", "array<i64: 0, 0>",
    "array<i64: 5, 5, 5, 5, 5>", "array<i64: -9223372036854775808>", "array<i32: 1>",
    "array<i128: 1>", "[0, 1]", '"x"', '"fused_a"', "@main", "dense<1.0> : tensor<2xf32>",
    "dense<[1.0, 2.0]> : tensor<3xf32>", "dense<1> : tensor<2xi32>", "#relay.se_scope<>",
    "#relay.se_scope<device = opencl, id = 1>", "#relay.se_scope<device = cuda>",
    "#relay.se_scope<id = 4294967296>", '#relay.se_scope<target = "llvm">',
    '#relay.se_scope<device = cpu, target = "opencl">', '#relay.se_scope<memory = "texture">',
    "{}", "none", "f32", "tensor<2xf32>", "affine_map<(d0) -> (d0)>",
]  # fmt: skip
TYPES = [
    "tensor<f32>", "tensor<1xf32>", "tensor<0xf32>", "tensor<2x3xf32>", "tensor<3x2xf32>",
    "tensor<?x3xf32>", "tensor<*xf32>", "tensor<2x3xi32>", "tensor<2x3xf64>", "tensor<2x3xf16>",
    "tensor<2x3xi1>", "tensor<2x3xindex>", "memref<2x3xf32>", "vector<4xf32>", "f32", "i64",
    "none", "tensor<2x3xcomplex<f32>>", "tensor<1x1x1x1x1x1x1x1xf32>", "tensor<1x2x3x4x5xf32>",
    "tensor<100000x100000x100000xf32>", "tensor<9223372036854775807x4xf32>", "!relay.bogus",
    "tensor<2x3xf32, #relay.se_scope<>>", "tuple<tensor<2xf32>>",
]  # fmt: skip
NUMBERS = ["0", "-1", "1", "2", "3", "-2", "9223372036854775807", "-9223372036854775808",
           "18446744073709551616", "4294967296", "2147483648", "1.0e+39", "0.0", "-0.0", "1e-45",
           "0x7FC00000", "0xFFFFFFFF"]  # fmt: skip
NAMES = ["cpu", "opencl", "cuda", "vulkan", "metal", "banana", "true", "false", "f32", "i64",
         "tensor", "memref", "array", "dense", "device", "id", "target", "memory", "loc", "attributes"]  # fmt: skip
PUNCT = list('{}()<>[],:=%@#^"') + ["->", ""]


def tokens(line: str) -> list[re.Match[str]]:
    return list(TOKEN.finditer(line))


def replace_span(line: str, match: re.Match[str], new: str) -> str:
    return line[: match.start()] + new + line[match.end() :]


def class_of(token: str) -> str:
    if token.startswith("%"):
        return "value"
    if token.startswith("@"):
        return "symbol"
    if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+(\.\d*)?(e[-+]?\d+)?)", token):
        return "number"
    if re.fullmatch(r"[A-Za-z_][\w.$]*", token):
        return "name"
    return "punct"


# --- mutations: each takes and returns the lines, or None when it does not apply ------------------

Lines = list[str]


def body_lines(lines: Lines) -> list[int]:
    return [
        i
        for i, line in enumerate(lines)
        if line.strip() and not line.strip().startswith(("func.func", "}", "builtin.module", "^bb"))
    ]


def swap_tokens(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    i = rng.randrange(len(lines))
    found = tokens(lines[i])
    if len(found) < 2:
        return None
    a, b = sorted(rng.sample(found, 2), key=lambda m: m.start())
    line = lines[i]
    lines[i] = line[: a.start()] + b.group() + line[a.end() : b.start()] + a.group() + line[b.end() :]
    return lines


def replace_token(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    i = rng.randrange(len(lines))
    found = tokens(lines[i])
    if not found:
        return None
    match = rng.choice(found)
    kind = class_of(match.group())
    same_kind = [t for t in TOKEN.findall(text) if class_of(t) == kind]
    pools = {"value": same_kind + ["%undefined", "%0#1"], "symbol": same_kind + ["@nope", "@main"],
             "number": NUMBERS + same_kind, "name": NAMES + RELAY_OPS + ATTR_KEYS + same_kind, "punct": PUNCT}  # fmt: skip
    lines[i] = replace_span(lines[i], match, rng.choice(pools[kind]))
    return lines


def delete_token(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    i = rng.randrange(len(lines))
    found = tokens(lines[i])
    if not found:
        return None
    lines[i] = replace_span(lines[i], rng.choice(found), "")
    return lines


def delete_lines(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    i = rng.randrange(len(lines))
    count = 1 if rng.random() < 0.8 else rng.randint(2, 5)
    del lines[i : i + count]
    return lines


def duplicate_line(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return lines


def move_line(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    body = body_lines(lines)
    if not body:
        return None
    line = lines.pop(rng.choice(body))
    lines.insert(rng.randrange(len(lines) + 1), line)
    return lines


def swap_lines(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    body = body_lines(lines)
    if len(body) < 2:
        return None
    a, b = rng.sample(body, 2)
    lines[a], lines[b] = lines[b], lines[a]
    return lines


def shuffle_definitions(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    body = body_lines(lines)
    if len(body) < 3:
        return None
    start = rng.randrange(len(body) - 2)
    run = body[start : start + rng.randint(3, 8)]
    picked = [lines[i] for i in run]
    rng.shuffle(picked)
    for i, line in zip(run, picked):
        lines[i] = line
    return lines


TENSOR = re.compile(r"tensor<([^<>]*)>")


def wrong_type(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    spots = [(i, m) for i, line in enumerate(lines) for m in TENSOR.finditer(line)]
    if not spots:
        return None
    i, match = rng.choice(spots)
    dims = match.group(1).split("x")[:-1]
    roll = rng.random()
    if roll < 0.4 and dims:
        k = rng.randrange(len(dims))
        dims[k] = rng.choice(
            [
                "0",
                "1",
                "2",
                "3",
                "7",
                "?",
                "-1",
                "100000",
                "9223372036854775807",
                str(int(dims[k]) + 1) if dims[k].isdigit() else "1",
            ]
        )
        new = "tensor<" + "".join(f"{d}x" for d in dims) + "f32>"
    elif roll < 0.6:
        if dims and rng.random() < 0.5:
            dims.pop(rng.randrange(len(dims)))
        else:
            dims.insert(rng.randint(0, len(dims)), rng.choice(["1", "2"]))
        new = "tensor<" + "".join(f"{d}x" for d in dims) + "f32>"
    else:
        new = rng.choice(TYPES)
    lines[i] = replace_span(lines[i], match, new)
    return lines


ATTR_ENTRY = re.compile(
    r"([\w.]+) = ((?:#relay\.se_scope<[^>]*>)|(?:array<[^>]*>)|(?:dense<[^>]*> : tensor<[^>]*>)|(?:\"[^\"]*\")|(?:[-\w.+]+(?: : \w+)?))"
)


def wrong_attr(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    spots = [(i, m) for i, line in enumerate(lines) for m in ATTR_ENTRY.finditer(line)]
    if not spots:
        return None
    i, match = rng.choice(spots)
    roll = rng.random()
    line = lines[i]
    if roll < 0.5:
        new = f"{match.group(1)} = {rng.choice(ATTR_VALUES)}"
    elif roll < 0.7:
        new = f"{rng.choice(ATTR_KEYS)} = {match.group(2)}"
    elif roll < 0.85:  # drop the entry (and a comma next to it)
        before, after = line[: match.start()], line[match.end() :]
        if after.startswith(", "):
            after = after[2:]
        elif before.endswith(", "):
            before = before[:-2]
        lines[i] = before + after
        return lines
    else:
        new = f"{match.group(0)}, {rng.choice(ATTR_KEYS)} = {rng.choice(ATTR_VALUES)}"
    lines[i] = replace_span(line, match, new)
    return lines


SCOPE = re.compile(r"#relay\.se_scope<([^>]*)>")
SCOPE_FIELDS = ["device = cpu", "device = opencl", "device = cuda", "device = gpu", "id = 0", "id = 1", "id = 7",
                "id = -1", "id = 99999999999999999999", 'target = "c"', 'target = "opencl"', 'target = "llvm"',
                'target = "c -O2"', 'target = "cuda"', 'target = ""', 'memory = "global"', 'memory = "texture"',
                'memory = "banana"', "device = opencl, device = cpu", "bogus = 1", "id = true", "device = 3",
                'memory = "\\22"', "id = 1.5"]  # fmt: skip


def wrong_scope(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    spots = [(i, m) for i, line in enumerate(lines) for m in SCOPE.finditer(line)]
    if not spots:
        return None
    i, match = rng.choice(spots)
    fields = rng.sample(SCOPE_FIELDS, rng.randint(0, 3))
    lines[i] = replace_span(lines[i], match, f"#relay.se_scope<{', '.join(fields)}>")
    return lines


OP_NAME = re.compile(r"\b(?:relay|func)\.[\w.]+\b")


def rename_op(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    spots = [(i, m) for i, line in enumerate(lines) for m in OP_NAME.finditer(line)]
    if not spots:
        return None
    i, match = rng.choice(spots)
    lines[i] = replace_span(lines[i], match, rng.choice(RELAY_OPS))
    return lines


def foreign_line(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    other = programs.generate(random.Random(rng.random())).text.splitlines()
    body = body_lines(other)
    if not body:
        return None
    lines.insert(rng.randrange(len(lines) + 1), other[rng.choice(body)])
    return lines


def char_noise(rng: random.Random, lines: Lines, text: str) -> Lines | None:
    joined = "\n".join(lines)
    if not joined:
        return None
    at = rng.randrange(len(joined))
    roll = rng.random()
    if roll < 0.3:
        joined = joined[:at]
    elif roll < 0.6:
        joined = joined[:at] + joined[at + rng.randint(1, 12) :]
    else:
        joined = joined[:at] + rng.choice(list('{}()<>[],:=%@#^"\\x0 \n') + ["\x00", "é", "//", "/*"]) + joined[at:]
    return joined.split("\n")


MUTATIONS: list[tuple[Callable[[random.Random, Lines, str], Lines | None], float]] = [
    (swap_tokens, 2), (replace_token, 4), (delete_token, 2), (delete_lines, 2), (duplicate_line, 1),
    (move_line, 2), (swap_lines, 1), (shuffle_definitions, 1), (wrong_type, 3), (wrong_attr, 4),
    (wrong_scope, 2), (rename_op, 2), (foreign_line, 1), (char_noise, 1.5),
]  # fmt: skip


def mutate(rng: random.Random, text: str) -> tuple[str, list[str]]:
    """`text` with none (the pipeline is the test) to four mutations; their names."""
    count = rng.choices([0, 1, 2, 3, 4], [5, 57, 23, 10, 5])[0]
    lines = text.split("\n")
    applied: list[str] = []
    while len(applied) < count:
        mutation = rng.choices([m for m, _ in MUTATIONS], [w for _, w in MUTATIONS])[0]
        if not lines:
            break
        result = mutation(rng, list(lines), text)
        if result is not None:
            lines = result
            applied.append(mutation.__name__)
    return "\n".join(lines), applied


# --- stages and pipelines -----------------------------------------------------------------------

LOWER = "convert-relay-to-loops"
TAIL = "inline-calls,plan-memory"


def plan_pass(rng: random.Random) -> str:
    targets = rng.choice(["c,opencl", "c,opencl", "opencl,c", "c", "opencl"])
    options = [f"targets={targets}"]
    if rng.random() < 0.7:
        options.append(
            f"default-device={rng.choice(['cpu', 'opencl'] if ',' in targets else ['cpu' if targets == 'c' else 'opencl'])}"
        )
    if rng.random() < 0.1:
        options.append("host-target=c")
    if rng.random() < 0.1:
        options.append("explain=true")
    return "plan-devices{" + " ".join(options) + "}"


def pipeline_for(rng: random.Random, stage: str) -> list[str]:
    """opt-tool flags for a mutant of `stage`: the passes that follow it, and a target."""
    plan = plan_pass(rng)
    fuse = "fuse-ops" if rng.random() < 0.8 else f"fuse-ops{{max-depth={rng.choice([1, 2, 3, 256])}}}"
    choices: dict[str, list[list[str]]] = {
        "source": [[], ["--print-op-generic"], ["-p", plan], ["-p", f"{plan},{fuse}"],
                   ["-p", f"{plan},{fuse},{LOWER}", "-t", "c"], ["-p", f"{plan},{fuse},{LOWER}", "-t", "opencl"],
                   ["-p", f"{plan},{fuse},{LOWER},{TAIL}", "-t", "graph-json"], ["-p", plan, "-t", "dot"],
                   ["-p", f"{plan},{fuse}", "-t", "dot"], ["-p", f"{plan},cse,dce,canonicalize"],
                   ["-p", f"{plan},{fuse},{LOWER}"],
                   # passes out of order, or without the ones they need: a clear error or a result
                   [rng.choice(["-p", "-p", "-t"]), rng.choice([fuse, LOWER, "inline-calls", "plan-memory", "c", "opencl", "graph-json", "dot"])],
                   ["-p", f"{fuse},{plan}"], ["-p", f"{plan},{LOWER}"], ["-p", f"{plan},{fuse},{fuse},{plan}"],
                   ["-p", f"{plan},{fuse},{LOWER},{LOWER}"], ["-p", f"{plan},inline-calls,{fuse},{LOWER},plan-memory", "-t", "graph-json"]],
        "planned": [[], ["-p", fuse], ["-p", plan], ["-p", f"{fuse},{LOWER}", "-t", "c"], ["-t", "dot"],
                    ["-p", f"{fuse},{LOWER}", "-t", "opencl"], ["-p", f"{fuse},{LOWER},{TAIL}", "-t", "graph-json"]],
        "fused": [[], ["-p", LOWER], ["-p", LOWER, "-t", "c"], ["-p", LOWER, "-t", "opencl"], ["-p", fuse],
                  ["-p", f"{LOWER},{TAIL}", "-t", "graph-json"], ["-t", "dot"], ["-p", plan]],
        "lowered": [[], ["-t", "c"], ["-t", "opencl"], ["-p", TAIL, "-t", "graph-json"], ["-p", f"{TAIL}"],
                    ["-p", "inline-calls"], ["-p", LOWER]],
    }  # fmt: skip
    flags = list(rng.choice(choices[stage]))
    if rng.random() < 0.05:
        flags.append("--split-input-file")
    return flags


def staged_text(rng: random.Random, program: programs.Program, workdir: str) -> tuple[str, str]:
    """The program printed at a random stage: (stage, text). Falls back to the source when
    a stage fails (a planted conflict)."""
    roll = rng.random()
    if roll < 0.55:
        return "source", program.text
    targets = ",".join(program.targets)
    plan = f"plan-devices{{targets={targets} default-device={program.default_device}}}"
    if roll < 0.7:
        stage, flags = "source", ["--print-op-generic"]
    elif roll < 0.82:
        stage, flags = "planned", ["-p", plan]
    elif roll < 0.92:
        stage, flags = "fused", ["-p", f"{plan},fuse-ops"]
    else:
        stage, flags = "lowered", ["-p", f"{plan},fuse-ops,{LOWER}"]
    status, out, _, _ = checks.run_opt_tool(program.text, flags, workdir)
    if status != 0:
        return "source", program.text
    return stage, out


# --- running ----------------------------------------------------------------------------------


def mutant_case(seed: int, index: int, workdir: str, options: dict[str, Any]) -> dict[str, Any]:
    rng = random.Random(f"{seed}:mutant:{index}")
    program = programs.generate(rng, programs.Options(**options.get("program_options", {})))
    stage, text = staged_text(rng, program, workdir)
    mutant, applied = mutate(rng, text)
    return {
        "text": mutant,
        "flags": pipeline_for(rng, stage),
        "stage": stage,
        "mutations": applied,
        "origin": f"mutant {index} of seed {seed}",
        "api": rng.random() < options.get("api_rate", 0.05),
        "subprocess": rng.random() < options.get("subprocess_rate", 0.02),
    }


def check_mutant(seed: int, index: int, workdir: str, options: dict[str, Any]) -> checks.Outcome:
    case = mutant_case(seed, index, workdir, options)
    outcome = checks.check_opt_tool(case, workdir)
    outcome.stats["opt-tool"] = 1
    if not outcome.failed and case["subprocess"]:
        outcome = check_subprocess(case, workdir)
        outcome.stats["subprocess"] = 1
    if not outcome.failed and case["api"]:
        api = checks.check_api({"text": case["text"], "origin": case["origin"]}, random.Random(index))
        api.stats["api"] = 1
        if api.failed:
            return api
        outcome.stats.update(api.stats)
    return outcome


def check_subprocess(case: dict[str, Any], workdir: str) -> checks.Outcome:
    """The case through a real `opt-tool` process: exit 0, or 1 with a message and no
    traceback."""
    opt_tool = Path(sys.executable).with_name("opt-tool")
    path = Path(workdir) / "input.mlir"
    path.write_text(case["text"])
    done = subprocess.run([str(opt_tool), str(path), *case["flags"]], capture_output=True, text=True, errors="replace")
    outcome = checks.Outcome("ok", case={**case, "check": "subprocess"})
    if done.returncode not in (0, 1):
        outcome.status, outcome.signature = "bad-exit", f"bad-exit: status {done.returncode} (opt-tool process)"
    elif "Traceback (most recent call last)" in done.stderr:
        last = done.stderr.strip().splitlines()[-1]
        outcome.status, outcome.signature = "traceback", f"traceback in the opt-tool process: {last.split(':')[0]}"
    elif done.returncode == 1 and not done.stderr.strip():
        outcome.status, outcome.signature = "silent-exit", "silent-exit (opt-tool process)"
    elif done.returncode == 1:
        outcome.status = "rejected"
    outcome.detail = done.stderr
    return outcome
