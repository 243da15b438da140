"""Readers of the shared-memory port probe's record (record.json, written by its runner outside the book's run), for
chapters 07-10: record, rows, table, port_roof, with_fills and fills_alone. Every rate per clock is per SM and per its own
clock (the kernel's clock64 stamps), so it does not depend on the clock NVML sampled."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")
PORT_GRID = "quarter of the SMs"   # the grid whose fills stay well under the L2 -> SM roof up to 80 B a clock


class NotRun(LookupError):
    """The record holds no measurement yet."""


def record() -> dict:
    return json.loads(RECORD.read_text())


def _time(rec: dict | None) -> dict:
    rec = rec or record()
    if "time" not in rec:
        raise NotRun("experiments/smem_port has not been run yet: run `bash experiments/smem_port/run.sh LOG_DIR` on "
                     "an H100 or H200 (ci/gpu.sh smem_port) and bring its record.json back.")
    return rec["time"]


def rows(operands: str = "A+B smem", grid: str = PORT_GRID, rec: dict | None = None) -> list[dict]:
    """One operand kind's sweep on one grid, by fill rate: for each build, the fill bytes a clock it asks for at the
    full tensor rate, the share of each SM clock its tensor pipe was busy, that against the no-fill build's, the
    operand and fill bytes per SM clock it moved, their sum (the port's use) and TFLOP/s with its IQR."""
    builds = {name: e for name, e in _time(rec)[grid].items() if name.startswith(operands + ", fill ")}
    return [{"fill_asked": e["fill_per_clk_at_full_rate"], "tensor_busy": e["tensor_busy"],
             "vs_no_fill": e["vs_no_fill"], "operand_bytes_per_clk": e["operand_bytes_per_clk"],
             "fill_bytes_per_clk": e["fill_bytes_per_clk"],
             "port_bytes_per_clk": e["operand_bytes_per_clk"] + e["fill_bytes_per_clk"],
             "tflops": e["tflops"], "iqr": e["iqr"], "clock_mhz": e["clock_mhz"]}
            for e in sorted(builds.values(), key=lambda e: e["fill_per_clk_at_full_rate"])]


def port_roof(operands: str = "A+B smem", rec: dict | None = None) -> float:
    """The most bytes per SM clock the sweep (a quarter of the SMs, fills rising) moved through shared memory, operand
    reads plus fills: past 128, so the two are not one port of one wavefront a clock."""
    return max(r["port_bytes_per_clk"] for r in rows(operands, PORT_GRID, rec))


def with_fills(fill_per_clk: float, operands: str = "A+B smem", rec: dict | None = None) -> dict:
    """The sweep's build (quarter grid) whose fills come nearest to `fill_per_clk` B per SM clock from above (the
    largest where none does): its tensor share of each SM clock is a ceiling for a GEMM landing that much, whatever
    else it does right."""
    rs = rows(operands, PORT_GRID, rec)
    return next((r for r in rs if r["fill_bytes_per_clk"] >= fill_per_clk), rs[-1])


def fills_alone(grid: str = PORT_GRID, rec: dict | None = None) -> float:
    """Fill bytes per SM clock that landed with no wgmma at all (the control): above what the sweep asks, the fills
    themselves (L2, the SM's link) are not what a falling tensor rate meets."""
    return _time(rec)[grid]["fills only"]["fill_bytes_per_clk"]


def table(rec: dict | None = None) -> None:
    """Print the record: each grid's builds, their tensor rate per SM clock against the no-fill build's, and the bytes
    per SM clock they moved through shared memory (operands read by wgmma + fills landed by TMA)."""
    rec = rec or record()
    try:
        t = _time(rec)
    except NotRun as e:
        print(e)
        return
    env = rec["env"]
    print(f"experiments/smem_port, {env['name']}, {env['date']}, outside the book's run: m64n256k16 back to back on "
          f"one resident tile beside TMA fills into the same SM's shared memory; per SM and per its clock")
    for grid, builds in t.items():
        first = next(iter(builds.values()))
        print(f"{grid}: {first['grid']} CTAs, one an SM")
        for name, e in builds.items():
            print(line(name, e))


def line(name: str, e: dict) -> str:
    """One build's line: its rate, tensor share of each SM clock, and the bytes per SM clock it moved."""
    port = e["operand_bytes_per_clk"] + e["fill_bytes_per_clk"]
    versus = f"{e['vs_no_fill']:.3f} of no fill" if "vs_no_fill" in e else "no wgmma"
    return (f"  {name:<20} {e['tflops']:7.1f} TFLOP/s (IQR {e['iqr'][0]:.1f}-{e['iqr'][1]:.1f}), tensor "
            f"{e['tensor_busy']:6.1%} of each SM clock ({versus}), operands {e['operand_bytes_per_clk']:5.1f} + fills "
            f"{e['fill_bytes_per_clk']:5.1f} = {port:5.1f} B/clk, fills {e['fill_tbs']:.2f} TB/s from L2, "
            f"{e['clock_mhz']:.0f} MHz")


def against(fill_pct: float, tensor_pct: float) -> str:
    """Two sentences a chapter's profile paragraph ends with: a rung that lands `fill_pct` % of 128 B a clock of TMA
    fills per SM, its tensor pipe `tensor_pct` % busy, against what the probe's wgmmas held beside as many fills."""
    from helpers.hardware import SMEM_BYTES_PER_CLK
    fill = fill_pct / 100 * SMEM_BYTES_PER_CLK
    near, env = with_fills(fill), record()["env"]
    gap = near["tensor_busy"] - tensor_pct / 100
    verdict = ("far below that ceiling, so the fills are not what holds it" if gap > 0.05 else
               "close to that ceiling, so the fills take a real share of what is left")
    return (f"Reads and fills are not one budget (`experiments/smem_port` moved {port_roof():.0f} B a clock of the two "
            f"through one SM, past 128), but fills cost the tensor pipe points of their own: with "
            f"{near['fill_bytes_per_clk']:.0f} B a clock landing per SM, back-to-back wgmmas held it "
            f"{near['tensor_busy']:.0%} of each clock ({env['name']}, {env['date']}, outside the book's run). This "
            f"rung lands {fill:.0f} B a clock with the tensor pipe at {tensor_pct:.0f}%: {verdict}.")
