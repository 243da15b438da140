"""Reader of the ladder-orders experiment's record (record.json, written by its runner outside the book's run), as
chapter 11 shows it: table."""
from __future__ import annotations

import json
from pathlib import Path

RECORD = Path(__file__).with_name("record.json")


def record() -> dict:
    return json.loads(RECORD.read_text())


def table(rec: dict | None = None, shown=("PEFCS", "PCSEF", "CPSEF")) -> str:
    """The lattice (chapter 10's five switches, 32 builds timed in one set of rounds) as text: how many of the 120
    orders rise at every step at both sizes, and for the orders `shown`, each step's factor at N = 4096 and 8192
    ('+' where it rises beyond the noise, '=' where it does not)."""
    rec = rec or record()
    env, orders = rec["env"], {o["order"]: o for o in rec["orders"]}
    sizes = list(rec["time"])
    words = dict(P="persistent", C="clusters", S="grouped", E="TMA store", F="4th stage")
    rising = [sum(s[n]["rises"] for s in o["steps"] for n in sizes) for o in orders.values()]
    lines = [f"experiments/ladder_orders, {env['name']}, {env['date']}, outside the book's run",
             f"of {len(orders)} orders, rising at every step at N = {' and '.join(sizes)}: "
             f"{sum(r == 2 * 5 for r in rising)}; at all but one: {sum(r == 2 * 5 - 1 for r in rising)}",
             f"{'order':<8}{'step':<14}" + "".join(f"{'N=' + n:>12}" for n in sizes)]
    for name in shown:
        for i, s in enumerate(orders[name]["steps"]):
            lines.append(f"{name if i == 0 else '':<8}{words[s['flag']]:<14}"
                         + "".join(f"{'x%.3f' % s[n]['factor']:>10} {'+' if s[n]['rises'] else '='}" for n in sizes))
    lines.append("+: the step's lower quartile above the upper quartile of the build before it; =: not")
    return "\n".join(lines)
