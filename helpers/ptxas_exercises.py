"""Edit a kernel, read the compiler's answer: ptxas's report on a learner's copy of a rung, and the graders of the
exercises that ask for it (chapter 06: __launch_bounds__ and blocks per SM; chapter 09: the consumers' setmaxnreg
allowance on the 128 x 320 tile). Everything here compiles with NVRTC on the CPU: no GPU, a fraction of a second a
build, each cached on disk, so a chapter and its tests can ask ptxas as often as they grade."""
from __future__ import annotations

from collections.abc import Callable

from .csource import source
from .hardware import KIB, REGISTER_FILE


def _build(rung_id: str, text: str | None = None):
    from .compiler import build
    return build(rung_id, source=text)


LAUNCH_BOUNDS = "__launch_bounds__(THREADS)"   # chapter 06's kernel line that exercises 4 and 5 edit


def compiler_says(rung_id: str, text: str) -> str:
    """What ptxas made of an edited copy of a rung's kernel, compiled as written (NVRTC, no GPU): registers a thread,
    bytes spilled, its advisories (the "(C7nnn)" lines), and how many blocks the registers and the shared memory let
    one SM hold; or, where it refused, its reason in its own words."""
    import re
    from .compiler import compile_source
    from .csource import CompileError
    from .hardware import SMEM_RESERVED_PER_BLOCK
    from .models import blocks_per_sm
    from .registry import rung
    r = rung(rung_id)
    try:
        b = compile_source(text, f"kernels/{r.path.name}", r.arch)
    except CompileError as e:
        said = re.findall(r"ptxas fatal\s*:\s*(\(C\d+\).*)", str(e))
        return f"ptxas refused it: {said[0]}" if said else f"it does not compile: {e}"
    if (res := b.resources.get(r.entry)) is None:
        return f"compiled, but there is no kernel named {r.entry}: keep the extern \"C\" name."
    lines = [f"ptxas compiled {r.entry}: {res.registers} registers a thread, " + (
        f"{res.spill_stores} bytes of spill stores and {res.spill_loads} of spill loads (a {res.stack_bytes}-byte "
        "stack frame in local memory)" if res.spill_stores + res.spill_loads else "nothing spilled")]
    lines += [f"ptxas says: {m}" for m in re.findall(r"^ptxas \w+\s*:\s*(\(C\d+\).*)$", b.log, re.M)]
    if {"THREADS", "SMEM_BYTES"} <= set(c := b.consts):
        fit = blocks_per_sm(res.registers, c["THREADS"], c["SMEM_BYTES"] + SMEM_RESERVED_PER_BLOCK)
        lines.append(f"one SM holds {fit['registers']} block(s) of {c['THREADS']} threads by registers, "
                     f"{fit['shared memory']} by shared memory ({c['SMEM_BYTES'] / KIB:.0f} KiB a block)")
    return "\n".join(lines)


def bounded(rung_id: str, blocks: int) -> str:
    """A rung's kernel asking ptxas for `blocks` blocks per SM: the second argument of its __launch_bounds__."""
    text = source(rung_id)
    if text.count(LAUNCH_BOUNDS) != 1:
        raise RuntimeError(f"chapter 06's exercise is out of date: {LAUNCH_BOUNDS} is not in {rung_id} exactly once")
    return text.replace(LAUNCH_BOUNDS, f"__launch_bounds__(THREADS, {blocks})")


def spill_free(rung_id: str, blocks: int) -> bool:
    """Does ptxas compile the rung asking for `blocks` blocks per SM with no spill (a refusal is a no)?"""
    from .compiler import build
    from .csource import CompileError
    from .registry import rung
    try:
        res = build(rung_id, source=bounded(rung_id, blocks)).resources[rung(rung_id).entry]
    except CompileError:
        return False
    return res.spill_stores + res.spill_loads == 0


def _register_cap(threads: int, blocks: int) -> Callable:
    """Chapter 06, exercise 4: the register cap ptxas compiles under for __launch_bounds__(threads, blocks)."""
    from .models import launch_registers
    cap, share = launch_registers(threads * blocks), REGISTER_FILE / (threads * blocks)
    why = {int(share): f"{REGISTER_FILE:,} / ({blocks} x {threads}) = {share:.1f}, but a warp gets its registers 256 "
                       "at a time, 8 a thread: round down to a multiple of 8",
           255: "255 is what a thread may address with no second argument; the second asks for more blocks",
           launch_registers(threads * (blocks - 1)): f"that is the cap for {blocks - 1} block(s) per SM"}
    return lambda mine: (mine == cap, why.get(int(mine) if isinstance(mine, (int, float)) else mine,
                                              f"split the SM's {REGISTER_FILE:,} registers among every thread of "
                                              "the blocks asked for"))


def most_blocks(rung_id: str, most: int = 4) -> int:
    """The most blocks per SM (up to `most`) one may ask of a rung before ptxas spills or refuses."""
    return next((b - 1 for b in range(1, most + 1) if not spill_free(rung_id, b)), most)


def _most_blocks(rung_id: str, most: int = 4) -> Callable:
    """Chapter 06, exercise 5, judged: most_blocks, with what a wrong count missed."""
    from .models import launch_registers
    best = most_blocks(rung_id, most)
    cap = lambda b: launch_registers(_build(rung_id).consts["THREADS"] * b)  # noqa: E731
    return lambda mine: (mine == best, f"at {mine} ptxas compiles under {cap(mine)} registers and spills (or "
                                       "refuses): compile it and read the report" if mine in range(best + 1, most + 1)
                         else f"{best} blocks still compile with no spill: try more" if mine in range(1, best)
                         else f"ask for 1 to {most} blocks in the cell above and read what ptxas reports each time")


# ---- chapter 09, exercise 3: the fewest registers the consumers can ask for on the 128 x 320 tile ----------------

CONSUMER_REGS = "constexpr int CONSUMER_REGS = {};"   # the kernel line exercise 3 edits
WIDE = "09_wide"                                        # the 128 x 320 tile with the 24 / 240 split


def with_consumer_regs(regs: int, rung_id: str = WIDE) -> str:
    """A rung's kernel with its consumers' setmaxnreg.inc allowance (CONSUMER_REGS) set to `regs`."""
    text, built = source(rung_id), _build(rung_id).consts["CONSUMER_REGS"]
    line = CONSUMER_REGS.format(built)
    if text.count(line) != 1:
        raise RuntimeError(f"chapter 09's exercise is out of date: {line!r} is not in {rung_id} exactly once")
    return text.replace(line, CONSUMER_REGS.format(regs))


def spills_at(regs: int, rung_id: str = WIDE) -> int | None:
    """Bytes of spill stores and loads ptxas needs with the consumers at `regs`; None where it refuses the source
    (the kernel's static_asserts: a value setmaxnreg does not take, or a split past the block's pool)."""
    from .csource import CompileError
    from .registry import rung
    try:
        res = _build(rung_id, with_consumer_regs(regs, rung_id)).resources[rung(rung_id).entry]
    except CompileError:
        return None
    return res.spill_stores + res.spill_loads


def fewest_consumer_regs(rung_id: str = WIDE) -> int:
    """The smallest allowance, in setmaxnreg's steps of 8 down from the kernel's own, under which the consumers still
    compile with no spill: scanned from the top, so every allowance between it and the kernel's compiles clean too."""
    regs = _build(rung_id).consts["CONSUMER_REGS"]
    if spills_at(regs, rung_id) != 0:
        raise RuntimeError(f"chapter 09's exercise is out of date: {rung_id} spills as built")
    while regs > 24 and spills_at(regs - 8, rung_id) == 0:
        regs -= 8
    return regs


def _fewest_consumer_regs(rung_id: str = WIDE) -> Callable:
    """Chapter 09, exercise 3, judged: fewest_consumer_regs, with what a wrong allowance missed."""
    from .models import launch_registers, register_budget
    c = _build(rung_id).consts
    best, built, cap = fewest_consumer_regs(rung_id), c["CONSUMER_REGS"], launch_registers(c["THREADS"])
    accumulators = 64 * c["BN"] // 128

    def judge(mine) -> tuple[bool, str]:
        if isinstance(mine, float) and mine.is_integer():
            mine = int(mine)
        if not isinstance(mine, int) or isinstance(mine, bool):
            return False, "an allowance is a whole number of registers a thread: edit CONSUMER_REGS and compile it"
        if mine == best:
            return True, ""
        if mine % 8 or not 24 <= mine <= 256:
            return False, "setmaxnreg takes a multiple of 8 in [24, 256]; the kernel's static_assert refuses the rest"
        if not register_budget(c["PRODUCER_REGS"], mine, c["CONSUMERS"])["fits"]:
            return False, (f"with the producer at {c['PRODUCER_REGS']}, {mine} is past the block's pool of "
                           f"{cap} x {c['THREADS']}: the kernel's static_assert refuses it")
        if mine == accumulators:
            return False, f"{accumulators} holds the accumulators alone; a consumer also keeps descriptors and addresses"
        if mine < best:
            spilled = spills_at(mine, rung_id)
            said = (f"at {mine} ptxas spills {spilled:,} bytes (and reports C7512): read the report" if spilled else
                    f"{mine} compiles, but {mine + 8} spills: scan down from the kernel's {built}, 8 at a time")
            return False, (f"{mine} is the launch cap, the 09_wide_spill build's situation; " if mine == cap else
                           f"{mine} is the napkin's {accumulators} + 24; " if mine == accumulators + 24 else "") + said
        return False, (f"{built} is the kernel's own allowance; it compiles with no spill, and so do smaller ones"
                       if mine == built else f"{mine} still compiles with no spill: try less")
    return judge
