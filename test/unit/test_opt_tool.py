"""`opt-tool`: flags, pipelines, and every user error exiting 1 with a message and no traceback.

Most cases call `main` in-process (an exception escaping it fails the test); a few run the
installed `opt-tool` script in subprocesses to check what a user sees."""

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import xrelay
from xrelay.runtime.machine import target_features
from xrelay.tools.opt_tool import main
from xrelay.transforms import PASSES

OPT_TOOL = str(Path(sys.executable).with_name("opt-tool"))

GOOD = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = relay.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = relay.multiply %0, %1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = relay.exp %a : tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}
"""

BAD_VERIFY = """func.func @main(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = relay.sum %a {axis = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""

BAD_PARSE = """func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = relay.exp %a : tensor<2x3xf32>
  func.return %0 tensor<2x3xf32>
}
"""

SPLIT = GOOD + "\n// -----\n\n" + BAD_PARSE  # the parse error is on line 13 of the file


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        main(list(argv))
        code = 0
    except SystemExit as e:
        code = e.code or 0
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def write(tmp_path):
    def write(text: str, name: str = "in.mlir") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


# --- flags ----------------------------------------------------------------------------------


def test_help_lists_xrelay_and_xdsl_passes_and_targets(capsys):
    code, out, _ = run_main(capsys, "--help")
    assert code == 0
    ours = out[out.index("xrelay passes (-p 'name{option=value ...}')") : out.index("-p PASSES, --passes PASSES")]
    for name in PASSES:
        assert f"\n  {name}" in ours
    assert "opt-tool --list-targets lists the -t targets" in out
    start = out.index("-p PASSES, --passes PASSES")
    section = "".join(out[start : out.index("--print-between-passes", start)].split())
    available = set(section.split("Availablepassesare:")[1].split(","))  # argparse wraps at hyphens
    assert {"cse", "dce", "canonicalize", *PASSES} <= available
    for flag in ("--print-op-generic", "--verify-diagnostics", "--split-input-file", "--output-file", "--list-targets"):
        assert flag in out


def test_help_gives_each_pass_its_options_defaults_and_a_line(capsys):
    """Each xrelay pass, with its options as the command line spells them and their defaults,
    then one line from its module docstring; before xDSL's own list of passes."""
    _, out, _ = run_main(capsys, "--help")
    lines = out.splitlines()
    entry = {
        line.strip(): lines[i + 1].strip()
        for i, line in enumerate(lines)
        if line.startswith("  ") and not line.startswith("   ")
    }
    assert entry["plan-devices{targets=c default-device=<unset> host-target=c explain=false}"].startswith(
        "give every relay value an SEScope"
    )
    assert (
        entry["fuse-ops{max-depth=256}"] == "put every primitive relay op into a `relay.fused` group (TVM's FuseOps)."
    )
    assert entry["plan-memory"].startswith("give every tensor of the lowered @main a storage id")
    for name in PASSES:
        assert any(key.split("{")[0] == name and entry[key] for key in entry), name
    assert out.index("xrelay passes (-p") < out.index("Available passes are:")


def test_help_gives_a_pass_its_whole_first_paragraph(capsys):
    """A module docstring's first paragraph over several lines is given whole, wrapped: not
    cut after its first line."""
    _, out, _ = run_main(capsys, "--help")
    section = " ".join(out[out.index("  fuse-conv-pool\n") : out.index("  fuse-attention")].split())
    assert section == (
        "fuse-conv-pool a conv2d group and the max_pool2d or global_avg_pool2d group that reads it become "
        "one group, "
        "whose kernel stores the pooled result."
    )


def test_list_targets(capsys):
    code, out, _ = run_main(capsys, "--list-targets")
    assert code == 0
    rows = dict(line.split(None, 1) for line in out.splitlines() if line.startswith("  "))
    assert rows["dot"] == "the program as a Graphviz DOT picture of its placement and fusion."
    assert rows["c"] == "the C kernels of the cpu-scoped kernels of a lowered module."
    assert rows["graph-json"].startswith("the executor graph of a lowered @main")
    assert rows["opencl"].startswith("the OpenCL C kernels")
    assert rows["mlir"] == "xDSL's mlir printer"
    assert out.index("xrelay targets:") < out.index("dot") < out.index("xDSL's own targets")


FEATURES = re.compile(
    r"^ {4,}features: (?P<isa>[\w. -]+), (?P<floats>\d+) floats x (?P<registers>\d+) vector registers, "
    r"(no )?FMA, L1d \d+ [KM]?i?B, L2 \d+ [KM]?i?B, L3 \d+ [KM]?i?B, (?P<cores>\d+) cores(, local memory .+)? \((?P<name>.+)\)$"
)


def test_list_targets_shows_the_features_of_each_kernel_target(capsys):
    """Under c and opencl (and no other target) a line of the features schedules read: the
    host's for c (as runtime/machine.py describes it), the OpenCL device's own for opencl."""
    code, out, _ = run_main(capsys, "--list-targets")
    assert code == 0
    lines = out.splitlines()
    features = {lines[i - 1].split()[0]: FEATURES.match(line) for i, line in enumerate(lines) if "features:" in line}
    assert sorted(features) == ["c", "opencl"]
    c, opencl = features["c"], features["opencl"]
    assert c is not None and opencl is not None
    host = target_features("c")
    assert (c["isa"], int(c["floats"]), int(c["registers"])) == (host.isa, host.vector_floats, host.vector_registers)
    assert int(c["cores"]) == host.cores >= 1
    device = target_features("opencl")
    assert opencl["isa"] == "opencl" and int(opencl["floats"]) == device.vector_floats >= 1
    assert opencl["name"] == device.name  # the device's, or "no OpenCL platform: the host, ..."


def test_version(capsys):
    code, out, _ = run_main(capsys, "--version")
    assert code == 0 and out.startswith("opt-tool (xrelay, xdsl ")


def test_round_trip_custom_and_generic(capsys, write):
    code, custom, _ = run_main(capsys, write(GOOD))
    assert code == 0 and "relay.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>" in custom
    code, generic, _ = run_main(capsys, write(custom), "--print-op-generic")
    assert code == 0 and '"relay.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>' in generic
    code, again, _ = run_main(capsys, write(generic))
    assert code == 0 and again == custom


def test_pipeline_of_xdsl_passes(capsys, write):
    code, out, _ = run_main(capsys, write(GOOD), "-p", "cse,dce")
    assert code == 0
    assert out.count("relay.add") == 1  # cse merged the two adds
    assert "relay.exp" not in out  # dce removed the unused, pure exp


def test_pipeline_with_options(capsys, write):
    code, out, _ = run_main(capsys, write(GOOD), "-p", "plan-devices{targets=c,opencl default-device=opencl},cse")
    assert code == 0, out
    module = xrelay.parse(out)
    scopes = {str(op.se_scope) for op in module.walk() if op.name.startswith("relay.")}
    assert scopes == {'#relay.se_scope<device = opencl, id = 0, target = "opencl", memory = "global">'}


def test_output_file(capsys, write, tmp_path):
    target = tmp_path / "out.mlir"
    code, out, _ = run_main(capsys, write(GOOD), "-o", str(target))
    assert code == 0 and out == ""
    assert "relay.multiply" in target.read_text()


def test_verify_diagnostics_prints_and_exits_0(capsys, write):
    path = write(BAD_VERIFY)
    code, out, _ = run_main(capsys, path, "--verify-diagnostics")
    assert code == 0
    assert f"{path}:2:3: expected result type tensor<3xf32> for 'relay.sum', but found tensor<2xf32>" in out
    assert "| Operation does not verify: expected result type" in out


def test_split_input_file(capsys, write):
    code, out, _ = run_main(
        capsys, write(GOOD + "\n// -----\n" + GOOD.replace("@main", "@second")), "--split-input-file"
    )
    assert code == 0
    first, second = out.split("// -----\n")
    assert "@main" in first and "@second" in second


def test_split_input_file_reports_lines_of_the_whole_file(capsys, write):
    path = write(SPLIT)
    assert SPLIT.splitlines()[12].strip().startswith("func.return %0 tensor")
    code, _, err = run_main(capsys, path, "--split-input-file")
    assert code == 1
    assert err.startswith(f"opt-tool: error: {path}:13:")
    code, out, _ = run_main(capsys, path, "--split-input-file", "--parsing-diagnostics")
    assert code == 0 and f"{path}:13:" in out


def test_verify_error_line_in_a_later_chunk(capsys, write):
    path = write(GOOD + "// -----\n" + BAD_VERIFY)
    code, _, err = run_main(capsys, path, "--split-input-file")
    assert code == 1
    assert err.startswith(f"opt-tool: error: {path}:10:3: expected result type tensor<3xf32> for 'relay.sum'")


# --- user errors: exit 1, one message, no traceback (subprocesses) ----------------------------

ERRORS = {
    "parse": (BAD_PARSE, [], r"\.mlir:3:18\n.*\n.*\n\s*Expected ':'"),
    "verify": (
        BAD_VERIFY,
        [],
        r"\.mlir:2:3: expected result type tensor<3xf32> for 'relay.sum', but found tensor<2xf32>",
    ),
    "pass": (GOOD, ["-p", "plan-devices{targets=c,llvm}"], r'two targets for device type cpu: "c" and "llvm"'),
    "pass option value": (GOOD, ["-p", "plan-devices{default-device=tpu}"], r"unknown default-device 'tpu'"),
    "unknown target kind": (GOOD, ["-p", "plan-devices{targets=fpga}"], r"unknown target kind 'fpga'"),
    "bad pipeline spec": (GOOD, ["-p", "cse{"], r"malformed pass pipeline: Error parsing pass pipeline specification"),
    "unknown pass option": (
        GOOD,
        ["-p", "cse{bogus=1}"],
        r"invalid pass pipeline: cse has no option 'bogus'; its options are none",
    ),
    "unknown pass": (GOOD, ["-p", "no-such-pass"], r"invalid pass pipeline: Unrecognized passes: \['no-such-pass'\]"),
    "unknown target": (GOOD, ["-t", "no-such-target"], r"argument -t/--target: invalid choice: 'no-such-target'"),
    "target with options": (
        GOOD,
        ["-t", "c -march=x86-64-v3"],
        r"-t takes a target name, but found 'c -march=x86-64-v3'; give a target's options to plan-devices: "
        r"-p 'plan-devices\{targets=\"c -march=x86-64-v3\"\},\.\.\.' -t c",
    ),
    "unknown flag": (GOOD, ["--no-such-flag"], r"unrecognized arguments: --no-such-flag"),
    "missing file": (None, [], r"No such file or directory: '.*missing.mlir'"),
    "unwritable output": (
        GOOD,
        ["-o", "/nonexistent/dir/out.mlir"],
        r"No such file or directory: '/nonexistent/dir/out.mlir'",
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_user_error_exits_1_with_one_message(capsys, tmp_path, name):
    text, args, message = ERRORS[name]
    path = tmp_path / ("missing.mlir" if text is None else "in.mlir")
    if text is not None:
        path.write_text(text)
    code, _, err = run_main(capsys, str(path), *args)  # an uncaught exception fails the test
    assert code == 1, err
    assert err.startswith("opt-tool: error: ") or "\nopt-tool: error: " in err
    assert re.search(message, err), err


def test_the_script_prints_no_traceback(tmp_path):
    """The installed entry point, in subprocesses (started together: one start-up to wait for)."""
    started = []
    for name in ("verify", "unknown target"):
        text, args, message = ERRORS[name]
        path = tmp_path / f"{name.replace(' ', '_')}.mlir"
        path.write_text(text)
        command = [OPT_TOOL, str(path), *args]
        started.append((message, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    for message, process in started:
        _, err = process.communicate()
        assert process.returncode == 1, err
        assert "Traceback" not in err
        assert re.search(message, err), err


def test_error_in_a_long_module_shows_only_the_lines_around_the_op(capsys, write):
    lines = [f"  %v{i} = relay.exp %v{i - 1} : tensor<2xf32>" for i in range(1, 80)]
    lines[40] = "  %v41 = relay.sum %v40 {axis = array<i64: 1>} : (tensor<2xf32>) -> tensor<f32>"
    lines[41] = "  %v42 = relay.exp %v40 : tensor<2xf32>"
    text = "\n".join(
        ["func.func @main(%v0: tensor<2xf32>) -> tensor<2xf32> {", *lines, "  func.return %v79 : tensor<2xf32>", "}"]
    )
    path = write(text)
    code, _, err = run_main(capsys, path)
    assert code == 1
    assert err.startswith(
        f"opt-tool: error: {path}:42:3: axis 1 is out of range for a tensor of rank 1; expected -1 <= axis < 1\n...\n"
    )
    assert err.rstrip().endswith("...")
    assert '%v41 = "relay.sum"(%v40)' in err and "| Operation does not verify: axis 1 is out of range" in err
    assert '"relay.exp"(%v10)' not in err and '"relay.exp"(%v70)' not in err
    assert len(err.splitlines()) < 25


def test_an_unclosed_string_is_an_error_at_once(capsys, write):
    """xDSL's string-literal regex backtracks exponentially in the rest of the line after an
    unclosed quote: this line took minutes (found by bench/fuzz.py)."""
    line = '  %12 = relay.nn.co"nv2d %v10, %11 {padding = array<i64: 0, 0, 1, 2>, dilation = array<i64: 2, 2>} : (tensor<3x4x1x1xf32>) -> tensor<3x1x2x3xf32>'
    path = write(GOOD.replace("  %3 = relay.exp %a : tensor<2x3xf32>", line))
    start = time.perf_counter()
    code, _, err = run_main(capsys, path)
    assert code == 1 and "End of file reached before closing string literal" in err
    with pytest.raises(xrelay.ParseError, match="closing string literal"):
        xrelay.parse('"' + "a, " * 200)
    assert time.perf_counter() - start < 5


def test_startup_does_not_import_the_interpreter_or_runtime():
    """opt-tool starts once per lit RUN line: xDSL's interpreters and pyopencl cost ~0.6 s."""
    probe = (
        "import sys; import xrelay.tools.opt_tool; "
        "heavy = [m for m in ('xrelay.interpreter', 'xrelay.driver', 'xdsl.interpreters', 'pyopencl') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
