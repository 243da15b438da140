"""The kernels' C source as text: its `constexpr int` constants, a rung's config applied to them, the `if constexpr`
switches those constants decide, the `common/` headers it includes, and the text a rung really builds.

One evaluator reads every C expression the course reads (a constant's value, a switch's condition, a chapter 01
index): `evaluate`, a small parser of C's integer expressions (no `eval`), with C's truncating `/` and `%`.
Nothing here compiles: helpers.compiler hands this text to NVRTC.
"""
from __future__ import annotations

import re

from .registry import KERNELS, Probe, Rung, lookup


class CompileError(RuntimeError):
    """The source cannot be built: NVRTC refused it, or a constant the course reads from it cannot be evaluated.
    The message names the file and the line and shows it."""


class CExprError(ValueError):
    """A C expression `evaluate` cannot read: a name it was not given, or syntax beyond its integer subset."""


# ---- one evaluator of C integer expressions ---------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"
                    r"|(&&|\|\||<<|>>|[<>=!]=|[-+*/%<>()?:!~&|^]))")
# C's binary operators by precedence (higher binds tighter); ?: sits below them all and groups to the right.
_BINARY = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7, ">=": 7,
           "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}


def _tokens(expr: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is "num", "name" or "op"."""
    out, pos, expr = [], 0, expr.rstrip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            raise CExprError(f"cannot read {expr[pos:].strip()!r} in `{expr.strip()}`")
        num, name, op = m.groups()
        out.append(("num", num) if num else ("name", name) if name else ("op", op))
        pos = m.end()
    return out


class _Parser:
    """Precedence climbing over the tokens, into a tree of tuples: ("num", v), ("name", n), (unary op, x),
    (binary op, a, b), ("?", cond, a, b). The tree is evaluated apart, so && || ?: evaluate only what C would."""

    def __init__(self, expr: str):
        self.expr, self.toks, self.i = expr, _tokens(expr), 0

    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) and self.toks[self.i][0] == "op" else None

    def take(self, op: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks) or (op and self.peek() != op):
            raise CExprError(f"`{self.expr.strip()}` ends early or lacks a {op or 'term'!r}")
        self.i += 1
        return self.toks[self.i - 1]

    def whole(self):
        tree = self.conditional()
        if self.i != len(self.toks):
            raise CExprError(f"cannot read `{self.expr.strip()}` past {self.toks[self.i][1]!r}")
        return tree

    def conditional(self):
        cond = self.binary(1)
        if self.peek() != "?":
            return cond
        self.take("?")
        yes = self.conditional()
        self.take(":")
        return ("?", cond, yes, self.conditional())

    def binary(self, lowest: int):
        left = self.unary()
        while (op := self.peek()) in _BINARY and _BINARY[op] >= lowest:
            self.take()
            left = (op, left, self.binary(_BINARY[op] + 1))
        return left

    def unary(self):
        kind, text = self.take()
        if kind == "num":
            return ("num", int(text, 8) if len(text) > 1 and text[0] == "0" and text.isdigit() else int(text, 0))
        if kind == "name":
            return ("name", text)
        if text == "(":
            inner = self.conditional()
            self.take(")")
            return inner
        if text in ("-", "+", "!", "~"):
            return ("unary" + text, self.unary())
        raise CExprError(f"cannot read {text!r} in `{self.expr.strip()}`")


def _scalar(x) -> bool:
    return getattr(x, "ndim", 0) == 0


def _div(a, b):
    """C's integer division: the quotient truncated toward zero (Python's // floors). Works on NumPy arrays too."""
    if _scalar(b) and b == 0:
        raise CExprError("division by zero")
    q = a // b
    return q + ((a - q * b != 0) & ((a < 0) != (b < 0)))


_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": _div,
        "%": lambda a, b: a - b * _div(a, b), "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
        "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "&": lambda a, b: a & b, "^": lambda a, b: a ^ b,
        "|": lambda a, b: a | b}


def _value(node, names: dict):
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "name":
        if node[1] not in names:
            raise CExprError(f"{node[1]} is not a name this expression was given")
        return names[node[1]]
    if kind == "?":
        cond = _value(node[1], names)
        if _scalar(cond):
            return _value(node[2] if cond else node[3], names)
        import numpy as np
        return np.where(cond, _value(node[2], names), _value(node[3], names))
    if kind in ("&&", "||"):
        a = _value(node[1], names)
        if _scalar(a) and bool(a) == (kind == "||"):  # decided by the left side: C never evaluates the right
            return kind == "||"
        b = _value(node[2], names)
        return (a != 0) & (b != 0) if kind == "&&" else (a != 0) | (b != 0)
    if kind.startswith("unary"):
        x = _value(node[1], names)
        return {"unary-": lambda: -x, "unary+": lambda: +x, "unary!": lambda: x == 0, "unary~": lambda: ~x}[kind]()
    return _OPS[kind](_value(node[1], names), _value(node[2], names))


def evaluate(expr: str, names: dict | None = None):
    """The value of a C integer expression: literals, `names` (a dotted name such as `threadIdx.x` is one key),
    + - * / % << >> & | ^ ~, comparisons, && || !, ?: and parentheses. `/` and `%` truncate toward zero as in C;
    a comparison gives a bool (0 or 1). Names may be NumPy arrays (one value per thread): the arithmetic is
    elementwise. Raises CExprError for anything else (a call, a cast, a name not given)."""
    return _value(_Parser(expr).whole(), names or {})


# ---- constants, configs and switches ----------------------------------------------------------------------------

def read_consts(source: str) -> dict[str, int]:
    """The `constexpr int NAME = <expr>;` lines of a kernel, evaluated in order (tile sizes, thread counts). One
    the course cannot evaluate stops the build, in one sentence: the registry and the chapters rely on them all."""
    consts: dict[str, int] = {}
    for name, expr in re.findall(r"^constexpr\s+int\s+(\w+)\s*=\s*([^;]+);", source, re.M):
        expr = re.sub(r"//.*", "", expr).strip()
        try:
            consts[name] = int(evaluate(expr, consts))
        except CExprError as e:
            raise CompileError(f"`constexpr int {name} = {expr};` could not be evaluated ({e}); write it with "
                               f"integers, earlier constants, + - * / and ?: only.") from None
    return consts


def apply_config(source: str, config: dict) -> str:
    """Set `constexpr int NAME = value;` lines to new values (a rung variant, a tuning experiment)."""
    for name, value in config.items():
        source, n = re.subn(rf"^(constexpr\s+int\s+{name}\s*=\s*)[^;]+;", rf"\g<1>{value};", source, flags=re.M)
        if n != 1:
            raise KeyError(f"no `constexpr int {name} = ...;` line to configure")
    return source


def _matching(text: str, i: int, open_: str, close: str) -> int:
    """Index just past the bracket that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        depth += (text[j] == open_) - (text[j] == close)
        if depth == 0:
            return j + 1
    raise ValueError(f"unbalanced {open_!r} at offset {i}")


def resolve_switches(source: str) -> str:
    """The source as the compiler keeps it: each `if constexpr (cond) { ... } else { ... }` whose condition reads
    only the file's `constexpr int` constants is replaced by the branch taken, one indentation level out. Rung
    variants are switches of one file, so a diff of the config-applied text alone would show a constant flip
    where the compiler adds or drops a whole branch. Braceless branches and conditions on anything else stay."""
    consts = read_consts(source)
    head, pos = re.compile(r"^([ \t]*)if constexpr \(", re.M), 0
    while (m := head.search(source, pos)):
        indent, start, i = m.group(1), m.start(), m.end() - 1
        branches, end, whole = [], start, True
        while True:  # the chain: if constexpr (c) {..} [else if constexpr (c) {..}]* [else {..}]
            close = _matching(source, i, "(", ")")
            brace = source.find("{", close)
            if brace < 0 or source[close:brace].strip():  # a braceless branch: the chain stays as written
                whole = False
                break
            end = _matching(source, brace, "{", "}")
            branches.append((source[i + 1:close - 1], source[brace + 1:end - 1]))
            rest = re.match(r"\s*else\s+(if constexpr \(|\{)", source[end:])
            if not rest:
                break
            if rest.group(1) == "{":
                brace = end + rest.end() - 1
                end = _matching(source, brace, "{", "}")
                branches.append(("1", source[brace + 1:end - 1]))
                break
            i = end + rest.end() - 1
        try:
            taken = next((body for cond, body in branches if evaluate(cond, consts)), "")
        except CExprError:  # a condition on something else: leave the chain to the compiler
            whole = False
        if not whole:
            pos = m.end()
            continue
        lines = taken.split("\n")
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        # one level out; preprocessor lines keep their column
        kept = "\n".join(ln if ln.startswith("#") else ln[4:] if ln.startswith(indent + "    ") else indent + ln.strip()
                         for ln in lines)
        line_end = source.find("\n", end)
        line_end = len(source) if line_end < 0 else line_end
        after = source[end:line_end]  # e.g. a comment after the closing brace
        source = source[:start] + kept + (after if after.strip() else "") + source[line_end:] if kept else \
            source[:start].rstrip(" \t") + source[line_end + 1:]
        pos = start
    return source


# ---- the files a kernel is built from ---------------------------------------------------------------------------

def local_headers(source: str) -> dict[str, str]:
    """The `#include "common/..."` files a kernel pulls from kernels/, recursively: name -> text."""
    found: dict[str, str] = {}
    todo = re.findall(r'^\s*#include\s+"([^"]+)"', source, re.M)
    while todo:
        name = todo.pop()
        if name not in found and (KERNELS / name).exists():
            found[name] = (KERNELS / name).read_text()
            todo += re.findall(r'^\s*#include\s+"([^"]+)"', found[name], re.M)
    return found


def source(item: Rung | Probe | str) -> str:
    """A rung's (or probe's) kernel as it is built: its .cu with the registry's constexpr config applied. The
    playground hands it to a learner to edit; experiments configure it further."""
    item = lookup(item) if isinstance(item, str) else item
    return apply_config(item.path.read_text(), getattr(item, "config", {}))


def built_source(r: Rung) -> tuple[str, str]:
    """(label, text) of the source a rung actually compiles: its .cu with the registry's constexpr config applied and
    each `if constexpr` switch resolved to the branch the compiler keeps (resolve_switches)."""
    config = ", ".join(f"{k}={v}" for k, v in r.config.items())
    label = f"kernels/{r.path.name}" + (f" with {config}" if config else "")
    return label, resolve_switches(source(r))
