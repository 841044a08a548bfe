"""`xrelay.parse` (ir.py): inputs on which xDSL's parser or verifiers raise a Python exception
instead of a diagnostic are `xrelay.ParseError`s and `VerifyError`s at the op (found by
bench/fuzz.py); the lexer is linear after an unclosed quote. test/tools/xdsl_failures.mlir
checks the same through opt-tool."""

import time

import numpy as np
import pytest

import xrelay


def module(op: str, result: str = "tensor<2xf32>", params: str = "") -> str:
    return f"func.func @main({params}) -> {result} {{\n  %0 = {op}\n  func.return %0 : {result}\n}}\n"


PARSE_ERRORS = {
    "complex": (
        module("relay.constant {value = dense<[1.0, 2.0]> : tensor<2xcomplex<f32>>} : tensor<2xf32>"),
        "AssertionError",
    ),
    "float32 overflow": (
        module("relay.constant {value = dense<1.0e+39> : tensor<2xf32>} : tensor<2xf32>"),
        "OverflowError",
    ),
    "i128": (
        module(
            "relay.sum %a {axis = array<i128: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>",
            "tensor<3xf32>",
            "%a: tensor<2x3xf32>",
        ),
        "NotImplementedError: Format not implemented for i128",
    ),
}


@pytest.mark.parametrize("name", list(PARSE_ERRORS))
def test_xdsl_parser_exceptions_are_parse_errors_at_the_op(name):
    text, message = PARSE_ERRORS[name]
    with pytest.raises(xrelay.ParseError, match=rf"<input>:2:3\n[\s\S]*cannot parse this op: {message}"):
        xrelay.parse(text)


def test_xdsl_verifier_exceptions_are_verify_errors_at_the_op():
    text = "func.func @main(%m: memref<2xf32>, %v: f32) {\n  memref.store %v, %m[] : memref<2xf32>\n  func.return\n}\n"
    with pytest.raises(
        xrelay.VerifyError, match="<input>:2:3: 'memref.store' does not verify: Exception: Expected an index"
    ):
        xrelay.parse(text)
    with pytest.raises(xrelay.VerifyError, match="'func.return' does not verify: KeyError: 'function_type'"):
        xrelay.parse('"func.func"() ({\n  "func.return"() : () -> ()\n}) : () -> ()\n')


def test_an_unclosed_quote_is_an_error_in_linear_time():
    start = time.perf_counter()
    with pytest.raises(xrelay.ParseError, match="closing string literal"):
        xrelay.parse('"' + "a, " * 2000)
    assert time.perf_counter() - start < 2


def test_non_finite_float_constants_print_as_hex_and_read_back():
    """A -inf attention mask went through str(module) as 0xFF800000 and came back as 4.29e9."""
    b = xrelay.Builder()
    x = b.input("x", (3,))
    module = b.finish(b.add(x, np.array([-np.inf, np.nan, 1.5], np.float32)))
    text = str(module)
    assert "0xff800000" in text.lower()
    again = xrelay.interpret(xrelay.parse(text), {"x": np.zeros(3, np.float32)})
    np.testing.assert_array_equal(again, np.array([-np.inf, np.nan, 1.5], np.float32))


def test_hex_dense_elements_are_bits_for_floats_and_numbers_for_integers():
    def constant(body: str) -> str:
        return (
            "func.func @main() -> tensor<2xf32> {\n"
            f"  %0 = relay.constant {{value = {body}}} : tensor<2xf32>\n"
            "  func.return %0 : tensor<2xf32>\n}"
        )

    out = xrelay.interpret(xrelay.parse(constant("dense<[0x7F800000, 0x3FC00000]> : tensor<2xf32>")), {})
    np.testing.assert_array_equal(out, np.array([np.inf, 1.5], np.float32))
    with pytest.raises(xrelay.ParseError, match="32 bits of a f32"):
        xrelay.parse(constant("dense<[0x1FF800000, 1.0]> : tensor<2xf32>"))


EXP = "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = relay.exp %x : tensor<2xf32>\n  func.return %0 : tensor<2xf32>\n}"


def test_parse_takes_utf8_bytes(tmp_path) -> None:
    """`xrelay.parse(b"...")` raised TypeError (issue 33, item 7); bytes that are not UTF-8,
    given to parse or build or read from a file, are a ParseError at the first bad byte."""
    assert str(xrelay.parse(EXP.encode())) == str(xrelay.parse(EXP))
    bad = EXP.encode().replace(b"%0 =", b"%\xff =")
    with pytest.raises(xrelay.ParseError, match=r"<input>:2:4: the program is not UTF-8 text: byte 0xff"):
        xrelay.parse(bad)
    with pytest.raises(xrelay.ParseError, match=r"<input>:2:4: the program is not UTF-8 text"):
        xrelay.build(bad)
    path = tmp_path / "bad.mlir"
    path.write_bytes(bad)
    with pytest.raises(xrelay.ParseError, match=r"bad.mlir:2:4: the program is not UTF-8 text"):
        xrelay.interpret(path, [np.ones(2, np.float32)])
    with pytest.raises(xrelay.UsageError, match="xrelay.parse takes relay text .* but was given int"):
        xrelay.parse(42)
