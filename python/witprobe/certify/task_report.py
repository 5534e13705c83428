"""Task readings as text (``certify run`` and ``certify show``): readings, never bounds.

Each task of ``run.json`` (:mod:`witprobe.certify.tasks`) prints one line: the metric served
compressed against uncompressed and their difference. Where the compressed model does materially
worse (accuracy lower by :data:`DAMAGE_ACCURACY` or more, perplexity higher by
:data:`DAMAGE_PPL_RATIO` or more), a ``TASK DAMAGE`` line follows, so that a ``pass`` verdict about
the per-layer bounds is never read as "the task is intact".
"""

from __future__ import annotations

from typing import Any

DAMAGE_ACCURACY = 0.1
"""An accuracy drop (absolute) from which the compressed model's task damage is called out."""
DAMAGE_PPL_RATIO = 1.05
"""A perplexity ratio (compressed over uncompressed) from which the damage is called out."""


def damage(t: dict[str, Any]) -> float:
    """How much worse the compressed model does: the accuracy drop, or the relative perplexity rise."""
    if t["metric"] == "perplexity":
        return t["compressed"] / t["uncompressed"] - 1.0
    return t["uncompressed"] - t["compressed"]


def damaged(t: dict[str, Any]) -> bool:
    if t["metric"] == "perplexity":
        return t["compressed"] >= DAMAGE_PPL_RATIO * t["uncompressed"]
    return t["uncompressed"] - t["compressed"] >= DAMAGE_ACCURACY


def format_tasks(tasks: list[dict[str, Any]]) -> list[str]:
    """The lines of the task readings (none when the run has none)."""
    if not tasks:
        return []
    out = ["task readings (compressed vs uncompressed; readings, not bounds):"]
    for t in tasks:
        if t["metric"] == "perplexity":
            what = (f"perplexity {t['compressed']:.3f} vs {t['uncompressed']:.3f} "
                    f"({100 * damage(t):+.1f}%)")
        else:
            right = round(t["compressed"] * t["items"]), round(t["uncompressed"] * t["items"])
            what = (f"{t['metric']} {right[0]}/{t['items']} vs {right[1]}/{t['items']} "
                    f"({t['compressed']:.3f} vs {t['uncompressed']:.3f}, drop {damage(t):+.3f})")
        out.append(f"  {t['task']}: {what}; {t['description']}")
    for t in tasks:
        if damaged(t):
            out.append(f"TASK DAMAGE: {t['task']} is materially worse served from the compressed memory "
                       f"({t['metric']} {t['uncompressed']:.3f} -> {t['compressed']:.3f}); the per-layer bounds "
                       "speak about attention, not about this task")
    return out


def compare_tasks(a: list[dict[str, Any]], b: list[dict[str, Any]], name_a: str, name_b: str) -> list[str]:
    """The task readings of two runs side by side (``certify compare``): per task in both, each
    run's compressed and uncompressed metric and the difference of the compressed ones (B - A);
    tasks in one run only are named."""
    if not a and not b:
        return []
    by_a, by_b = {t["task"]: t for t in a}, {t["task"]: t for t in b}
    out = [f"task readings (A = {name_a}, B = {name_b}; readings, not bounds):"]
    for task in [t["task"] for t in a if t["task"] in by_b]:
        ta, tb = by_a[task], by_b[task]
        out.append(f"  {task} {ta['metric']}: A {ta['compressed']:.4f} (uncompressed {ta['uncompressed']:.4f}), "
                   f"B {tb['compressed']:.4f} (uncompressed {tb['uncompressed']:.4f}); compressed B - A "
                   f"{tb['compressed'] - ta['compressed']:+.4f}")
    for task in by_a.keys() - by_b.keys():
        out.append(f"  {task}: only in A")
    for task in by_b.keys() - by_a.keys():
        out.append(f"  {task}: only in B")
    return out
