"""helpers.csource: the one evaluator of C integer expressions (C's truncating division, comparisons, && || !, ?:,
names), and the rule that no other module evaluates C text with Python's eval. CPU only."""
import ast

import numpy as np
import pytest

from helpers.csource import CExprError, evaluate, read_consts
from helpers.registry import ROOT


@pytest.mark.parametrize("expr, want", [
    ("7 / 2", 3), ("-7 / 2", -3), ("7 / -2", -3), ("-7 / -2", 3),  # / truncates toward zero, as C's does
    ("7 % 3", 1), ("-7 % 3", -1), ("7 % -3", 1),                    # and % takes the sign of the dividend
    ("2 + 3 * 4", 14), ("(2 + 3) * 4", 20), ("20 / 2 / 5", 2), ("10 - 4 - 3", 3),  # precedence, left to right
    ("1 << 4 + 1", 32), ("0x10 | 3", 19), ("6 & 3 ^ 1", 3), ("~0", -1), ("-(3)", -3), ("010", 8),
    ("227 * 1024", 232448), ("128u", 128),
    ("3 > 2", True), ("3 >= 4", False), ("2 == 2 && 3 != 3", False), ("0 || 5", True), ("!0", True), ("!7", False),
    ("1 ? 2 : 3", 2), ("0 ? 2 : 3", 3), ("0 ? 1 : 0 ? 2 : 3", 3), ("1 ? 0 ? 4 : 5 : 6", 5),  # ?: groups to the right
    ("(1 ? 2 : 3) * 10", 20), ("2 > 1 ? 2 - 1 : 0", 1),
])
def test_evaluate_reads_c_integer_expressions(expr, want):
    got = evaluate(expr)
    assert got == want and type(got) is type(want)


def test_evaluate_reads_names_and_evaluates_only_what_c_would():
    names = {"BM": 128, "STAGES": 1, "threadIdx.x": 5}
    assert evaluate("BM / 64 + threadIdx.x", names) == 7
    assert evaluate("STAGES > 1 ? STAGES - 2 : 0", names) == 0
    # the side C skips is not evaluated, so a name nobody gave (or a division by zero) there is no error
    assert evaluate("STAGES == 0 && UNKNOWN", names) is False
    assert evaluate("STAGES == 1 || UNKNOWN", names) is True
    assert evaluate("STAGES ? BM : BM / 0", names) == 128


def test_evaluate_works_elementwise_on_arrays():
    # chapter 01's figures evaluate a kernel's index lines for every thread of a block at once
    t = np.arange(-4, 5)
    got = evaluate("t / 3 * 10 + t % 3", {"t": t})
    assert got.tolist() == [int(x / 3) * 10 + int(np.fmod(x, 3)) for x in t]
    assert evaluate("t > 0 ? t : 0", {"t": t}).tolist() == [0, 0, 0, 0, 0, 1, 2, 3, 4]
    assert evaluate("t > 0 && t < 3", {"t": t}).tolist() == [x in (1, 2) for x in t]


@pytest.mark.parametrize("expr", ["sizeof(int)", "(int)3", "min(1, 2)", "a = 1", "1 +", "(1", "1 ? 2", "x", "1 / 0",
                                  "__import__('os')", "1; 2", "a[0]", "'s'"])
def test_evaluate_refuses_anything_else_in_one_error(expr):
    with pytest.raises(CExprError):
        evaluate(expr, {"a": 1})


def test_read_consts_names_the_line_it_cannot_evaluate():
    from helpers.csource import CompileError
    assert read_consts("constexpr int A = 7;\nconstexpr int B = -A / 2;  // C: -3\n") == {"A": 7, "B": -3}
    with pytest.raises(CompileError, match=r"`constexpr int B = sizeof\(float\);` could not be evaluated"):
        read_consts("constexpr int B = sizeof(float);\n")


def test_no_helpers_module_calls_eval_or_exec():
    # One evaluator of C text: csource.evaluate. Python's eval would also run whatever a learner's edit holds.
    calls = [f"{p.relative_to(ROOT)}:{node.lineno}" for p in sorted((ROOT / "helpers").rglob("*.py"))
             for node in ast.walk(ast.parse(p.read_text())) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id in ("eval", "exec")]
    assert calls == []
