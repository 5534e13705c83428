"""``certify report DIR``: one self-contained HTML page from a run directory's primary records.

The page is rendered from ``run.json`` and ``certificate.json`` alone, both re-read and validated
here (nothing is taken from a previous rendering): inline CSS, inline SVG plots drawn by this
module, no script, no external resource, so the file can be mailed or archived as is.

Reading (:func:`load_report`) fails closed with :class:`witprobe.cliutil.InputError` (exit 2, one
line naming the file and the JSON field) when:

- either file is unreadable, not JSON, not an object or of a foreign schema;
- ``run.json`` does not derive (:func:`witprobe.certify.derive.derive`, the same parser as
  ``certify check``) or is not the run the certificate was made from (``run_json_sha256``);
- a field the page shows is missing or of the wrong type (the tables of ``certify show`` are
  rendered too, so every field they read is checked the same way);
- a bound's ``decimal_up`` is not its ``exact`` value rounded up at 6 places;
- a claim is ``certified`` while vacuous or without a kernel-checked theorem (the page never shows
  a bound as certified unless a proof kernel checked the theorem stating it);
- the summary's headline is not the one :func:`witprobe.certify.verdict.headline` states for the
  summary's own verdict, scope and end-to-end readings.

A certificate that reads but is not the one ``run.json`` and its recorded kernel outcomes give (a
bound below its realized value, an edited tier or verdict: :mod:`witprobe.certify.recorded`) is
rendered with a ``NOT VERIFIED`` banner in place of its verdict and every tier shown as
``UNVERIFIED``; nothing on the page reads as certified or pass.

Writing (:func:`write_report`) renders the whole page first, then writes it to a temporary file
beside the target and renames it into place: a failure leaves no half-written page.
"""

from __future__ import annotations

import dataclasses
import html
import io
import math
from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

from witprobe.calculus import rounding
from witprobe.calculus.tiers import Tier
from witprobe.certify import verdict
from witprobe.certify.certificate import sha256_text
from witprobe.certify.certificate_record import load_certificate
from witprobe.certify.coverage import format_coverage
from witprobe.certify.derive import DeriveError, as_run, derive
from witprobe.certify.end_to_end import DEFAULT_TV_TOLERANCE, EndToEnd, format_end_to_end
from witprobe.certify.task_report import damage, format_tasks
from witprobe.certify.pipeline import REPORT_FILE, RUN_SCHEMA_PREFIX
from witprobe.certify.recorded import VERIFIED_NOTE, bounds_below_realized, rederive_problems
from witprobe.certify.report import print_summary, print_table
from witprobe.certify.run_record import QueryAlignedRecord, RunRecord, Statistic, count
from witprobe.cliutil import InputError, UsageError, read_json_object, read_text_capped, read_with
from witprobe.typed_json import encode

__all__ = ["Report", "load_report", "render_html", "write_report", "REPORT_FILE"]

KERNEL_CHECKED = "kernel_checked"
CERTIFIED = Tier.CERTIFIED.value
UNVERIFIED = "UNVERIFIED"  # the tier shown for every claim of a certificate that does not verify
COLOURS = {"certified": "#1a7f37", "partial": "#8250df", "empirical": "#bc4c00", "vacuous": "#cf222e",
           "realized": "#1f2328", "runner_up": "#8c959f", "residual": "#0969da", "witness": "#8250df"}
"""Plot colours by meaning (a certified bound is drawn in the certified colour only)."""


# ----------------------------------------------------------------------------- typed records


@dataclass(frozen=True)
class Header:
    """What was run and which kernels checked it."""

    model: str
    family: str
    memory_class: str
    num_layers: int
    codec: str
    bands: int
    compress_values: bool
    max_new_tokens: int
    prompts: tuple[str, ...]
    query_aligned: str  # the query-aligned witness's calibration ('' when the run stored none)
    measured_with: str  # witprobe version recorded in run.json's environment
    rendered_with: str  # witprobe version that wrote this page
    environment: tuple[tuple[str, str], ...]
    run_sha256: str
    coq_line: str  # as `certify show` prints it
    lean_line: str
    coq_checked: bool  # Coq's kernel checked every claim theorem of the run
    lean_checked: bool


@dataclass(frozen=True)
class Bound:
    """An upper bound: the exact rational, its float (for plotting) and its 6-place decimal rounded up."""

    exact: Fraction
    text: str

    @property
    def value(self) -> float:
        return float(self.exact)


@dataclass(frozen=True)
class ClaimRow:
    """One claim of the certificate with its tier, the reason for it and the kernels' statuses."""

    id: str
    kind: str
    layer: int
    bound: Bound | None
    vacuous: bool
    form: str | None
    tier: str
    tier_reason: str
    coq: str
    lean: str
    realized: float | None  # the realized error the bound is compared with (TV, or ||.||_2)
    tightness: float | None  # bound / realized
    runner_up: Bound | None  # attn_tv only: the tightest other form's bound (e.g. centred beside a box claim)
    runner_up_form: str | None
    runner_up_vacuous: bool
    runner_up_tightness: float | None  # runner-up bound / realized TV


@dataclass(frozen=True)
class Spread:
    """Minimum, mean and maximum of a per-entry quantity over a layer's writes."""

    min: float
    mean: float
    max: float
    n: int


@dataclass(frozen=True)
class WriteStats:
    """A layer's write residual ``||D||`` and band witness ``W`` for one tensor (key, value, latent, ...)."""

    layer: int
    tensor: str
    residual: Spread
    witness: Spread
    conservativeness: Spread | None  # W / ||D|| per entry (>= 1 by construction)
    violations: int  # witness below residual or above sqrt(bands) (self-checks; must be 0)


@dataclass(frozen=True)
class RequestReading:
    """One request's end-to-end readings: greedy tokens against the uncompressed reference, next-token TV."""

    index: int
    prompt_tokens: int
    served: int
    agreeing_prefix: int | None
    position_matches: int | None
    next_token_tv: tuple[float, ...]


@dataclass(frozen=True)
class SelfCheck:
    name: str
    count: int
    ok: bool
    meaning: str


@dataclass(frozen=True)
class Report:
    """Everything the page shows, read and validated from one run directory."""

    header: Header
    verdict: str  # "pass" | "fail"
    headline: str  # summary.headline: the CLI's verdict line, after "verdict: "
    cli_summary: str  # what `certify show` prints below its table
    cli_table: str  # the table `certify show` prints
    claims: tuple[ClaimRow, ...]
    coverage: tuple[tuple[str, ...], ...]  # format_coverage lines split at " | "
    writes: tuple[WriteStats, ...]
    self_checks: tuple[SelfCheck, ...]
    failures: tuple[str, ...]
    end_to_end: EndToEnd
    end_to_end_line: str
    requests: tuple[RequestReading, ...]
    tv_tolerance: float
    problems: tuple[str, ...] = ()  # why the certificate does not verify (empty: it does)
    tasks: tuple[dict[str, Any], ...] = ()  # run.json tasks: task readings beside the bounds (readings)

    @property
    def tv_claims(self) -> tuple[ClaimRow, ...]:
        return tuple(c for c in self.claims if c.kind == "attn_tv")


# ----------------------------------------------------------------------------- reading


def _bound(b: Any, where: str) -> Bound | None:
    """A certificate bound ``{"exact": "n/d", "decimal_up": ...}``, its decimal checked against the exact value."""
    if b is None:
        return None
    exact = rounding.parse_fraction(b["exact"])
    text = rounding.decimal_up(exact, 6)
    if b["decimal_up"] != text:
        raise ValueError(f"{where}.decimal_up {b['decimal_up']!r} is not {text!r}, the exact value rounded up")
    return Bound(exact, text)


def _num(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        raise ValueError(f"{what}: expected a number, found {v!r}")
    return float(v)


def _opt_num(v: Any, what: str) -> float | None:
    return None if v is None else _num(v, what)


def _claim(i: int, c: dict[str, Any]) -> ClaimRow:
    where = f"claims[{i}]"
    bound = _bound(c["bound"], f"{where}.bound")
    tier, vacuous = c["tier"], c["vacuous"]
    if not isinstance(vacuous, bool):
        raise TypeError(f"{where}.vacuous must be true or false")
    coq, lean = c["kernels"]["coq"]["status"], c["kernels"]["lean"]["status"]
    if tier == CERTIFIED:  # fail closed: the page would otherwise show it as certified
        if vacuous or bound is None:
            raise ValueError(f"{where} ({c['id']}) is certified but its bound is vacuous or absent")
        if KERNEL_CHECKED not in (coq, lean):
            raise ValueError(f"{where} ({c['id']}) is certified but no kernel checked its theorem")
    # the tightest other form beside the claim (the box bound beside a centred claim, or the reverse)
    others = sorted(((_bound(f["bound"], f"{where}.forms.{k}.bound"), k, bool(f["vacuous"]))
                     for k, f in c["forms"].items() if k != c.get("form") and f.get("bound") is not None),
                    key=lambda o: o[0].value) if c["kind"] == "attn_tv" else []
    alt, alt_form, alt_vac = others[0] if others else (None, None, False)
    realized = c.get("realized_tv_max")
    return ClaimRow(
        id=str(c["id"]), kind=str(c["kind"]), layer=int(c["layer"]), bound=bound, vacuous=vacuous,
        form=c.get("form"), tier=str(tier), tier_reason=str(c["tier_reason"]), coq=str(coq), lean=str(lean),
        realized=_opt_num(realized, f"{where}.realized_tv_max"),
        tightness=_opt_num(c.get("tightness"), f"{where}.tightness"),
        runner_up=alt, runner_up_form=alt_form, runner_up_vacuous=alt_vac,
        runner_up_tightness=(alt.value / realized if alt is not None and isinstance(realized, (int, float))
                             and realized > 0 else None),
    )


def _spread(s: Statistic) -> Spread:
    return Spread(min=_num(s.min, "min"), mean=_num(s.mean, "mean"), max=_num(s.max, "max"), n=s.n)


def _writes(run: RunRecord) -> list[WriteStats]:
    """Per layer and tensor: residual, witness and W/||D|| (every ``<t>_residual`` with a ``<t>_witness``)."""
    out = []
    for layer in run.layers:
        write = layer.write
        for key in sorted(k for k in write if k.endswith("_residual") and not k.endswith("_rel_residual")):
            t = key[: -len("_residual")]
            res, wit = write[key], write.get(f"{t}_witness")
            if not isinstance(res, Statistic) or not isinstance(wit, Statistic) or res.n == 0:
                continue
            cons = write.get(f"{t}_conservativeness")
            viol = sum(count(write, f"{t}_viol_witness_{w}") for w in ("below_residual", "above_sqrt_bands"))
            out.append(WriteStats(layer=layer.layer, tensor=t, residual=_spread(res), witness=_spread(wit),
                                  conservativeness=_spread(cons) if isinstance(cons, Statistic) and cons.n else None,
                                  violations=viol))
    return out


def _requests(run: RunRecord) -> list[RequestReading]:
    out = []
    for i, r in enumerate(run.requests):
        ref = r.reference_tokens
        tv = tuple(_num(x, f"requests[{i}].next_token_tv") for x in (r.next_token_tv or []))
        out.append(RequestReading(
            index=r.prompt_index, prompt_tokens=r.prompt_tokens, served=len(r.served_tokens),
            agreeing_prefix=r.agreeing_prefix,
            position_matches=sum(a == b for a, b in zip(r.served_tokens, ref)) if ref is not None else None,
            next_token_tv=tv))
    return out


def _prompt_text(p: str | list[dict[str, str]]) -> str:
    """A prompt as one line: the string, or a chat's messages as ``role: content`` joined by `` / ``."""
    if isinstance(p, str):
        return p
    return " / ".join(f"{m.get('role', '?')}: {m.get('content', '')}" for m in p)


def _qa_text(qa: QueryAlignedRecord | None) -> str:
    """One line on the query-aligned witness of a run (``config.query_aligned``), or ''."""
    if qa is None:
        return ""
    return (f"rank {qa.rank}, {qa.witness_bytes_per_entry} B per key entry and KV head; bases calibrated on "
            f"{len(qa.calibration_prompts)} prompts ({qa.calibration_tokens} tokens) not among the measured ones: "
            f"{qa.method}; bases SHA-256 {qa.basis_sha256}")


def _read_run(run: RunRecord) -> dict[str, Any]:
    model, cfg, env = run.model, run.config, run.environment
    return {
        "header": dict(model=model.name, family=model.family, memory_class=model.memory_class,
                       num_layers=model.num_layers, codec=cfg.codec, bands=cfg.bands,
                       compress_values=cfg.compress_values, max_new_tokens=cfg.max_new_tokens,
                       prompts=tuple(_prompt_text(p) for p in cfg.prompts),
                       query_aligned=_qa_text(cfg.query_aligned),
                       measured_with=env.witprobe,
                       environment=tuple(sorted(encode(env).items()))),
        "writes": _writes(run),
        "requests": _requests(run),
        "tv_tolerance": _num(DEFAULT_TV_TOLERANCE if cfg.e2e_tv_tolerance is None else cfg.e2e_tv_tolerance,
                             "config.e2e_tv_tolerance"),
    }


def _read_cert(cert: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    from witprobe.certify.report import _kernel_line  # the CLI's wording of the kernel lines

    table, summary = io.StringIO(), io.StringIO()
    print_table(cert, table, verified=not problems)  # every field `certify show` reads, read the same way
    print_summary(cert, summary, problems)
    s = cert["summary"]
    ok = s["verdict"] == "pass"
    if s["verdict"] not in ("pass", "fail"):
        raise ValueError(f"summary.verdict {s['verdict']!r} is neither 'pass' nor 'fail'")
    stated = verdict.headline(ok, s["bounded"], s["end_to_end"])
    if s["headline"] != stated:
        raise ValueError(f"summary.headline is not what the verdict, scope and end-to-end state ({stated!r})")
    e2e = s["end_to_end"]
    end = EndToEnd(**{f.name: e2e[f.name] for f in fields(EndToEnd)})
    claims = [_claim(i, c) for i, c in enumerate(cert["claims"])]
    if problems:  # no tier of a certificate that does not verify is shown as witprobe's
        claims = [dataclasses.replace(c, tier=UNVERIFIED) for c in claims]
    return {
        "verdict": s["verdict"], "headline": s["headline"],
        "cli_table": table.getvalue(), "cli_summary": summary.getvalue(),
        "claims": claims,
        "coverage": [tuple(line.split(" | ")) for line in format_coverage(cert["coverage"])],
        "self_checks": [SelfCheck(str(k), int(v["count"]), bool(v["ok"]), str(v["meaning"]))
                        for k, v in sorted(cert["self_checks"].items())],
        "failures": tuple(str(f) for f in cert["failures"]),
        "end_to_end": end, "end_to_end_line": format_end_to_end(e2e),
        "coq_line": _kernel_line("coq", s["coq"], cert["kernels"]["coq"], "rejected"),
        "lean_line": _kernel_line("lean", s["lean"], cert["kernels"]["lean"], "failed"),
        "coq_checked": 0 < s["coq"]["theorems"] == s["coq"]["kernel_checked"],
        "lean_checked": 0 < s["lean"]["theorems"] == s["lean"]["kernel_checked"],
    }


def load_report(directory: Path) -> Report:
    """Read and validate ``run.json`` and ``certificate.json`` of ``directory`` (see the module docstring)."""
    from witprobe.version import __version__

    d = Path(directory)
    if not d.is_dir():
        raise UsageError(f"{d} is not a directory")
    run_path, cert_path = d / "run.json", d / "certificate.json"
    cert = load_certificate(cert_path)
    run = read_json_object(run_path, schema_prefix=RUN_SCHEMA_PREFIX)
    run_sha = sha256_text(read_text_capped(run_path))
    if cert.get("run_json_sha256") != run_sha:
        raise InputError(cert_path, "run_json_sha256", f"is not the SHA-256 of {run_path} ({run_sha}): "
                                                       "the certificate was not made from this run")
    try:
        typed = as_run(run)  # the typed record: every field _read_run reads has its type
        derive(typed)  # the parser `certify check` uses: a run it cannot derive is corrupt
        r = _read_run(typed)
    except DeriveError as e:
        raise InputError(run_path, "", f"cannot be derived: {e}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise InputError(run_path, "", f"malformed ({type(e).__name__}: {e})") from None
    problems = bounds_below_realized(cert) + rederive_problems(run, run_sha, cert)
    c = read_with(cert_path, cert, lambda x: _read_cert(x, problems))
    header = Header(**r["header"], rendered_with=__version__, run_sha256=run_sha, coq_line=c["coq_line"],
                    lean_line=c["lean_line"], coq_checked=c["coq_checked"], lean_checked=c["lean_checked"])
    return Report(header=header, verdict=c["verdict"], headline=c["headline"], cli_summary=c["cli_summary"],
                  cli_table=c["cli_table"], claims=tuple(c["claims"]), coverage=tuple(c["coverage"]),
                  writes=tuple(r["writes"]), self_checks=tuple(c["self_checks"]), failures=c["failures"],
                  end_to_end=c["end_to_end"], end_to_end_line=c["end_to_end_line"],
                  requests=tuple(r["requests"]), tv_tolerance=r["tv_tolerance"], problems=tuple(problems),
                  tasks=tuple(run.get("tasks") or ()))


# ----------------------------------------------------------------------------- SVG plots


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


@dataclass(frozen=True)
class Axes:
    """A plot frame: ``x`` linear over ``[x0, x1]``, ``y`` log10 over ``[y0, y1]`` (``y0 > 0``); pixels."""

    x0: float
    x1: float
    y0: float
    y1: float
    width: int = 1100
    height: int = 300
    left: int = 70
    right: int = 170  # room for the legend
    top: int = 30
    bottom: int = 40

    @staticmethod
    def for_values(x0: float, x1: float, ys: list[float], lo: float = 1e-6) -> "Axes":
        """Decade-aligned log axes that hold every positive ``y`` (zeros are drawn on the floor)."""
        pos = [y for y in ys if y > 0]
        ymin = max(min(pos, default=lo), lo)
        ymax = max(pos, default=1.0)
        return Axes(x0, x1, 10 ** math.floor(math.log10(ymin)), 10 ** math.ceil(math.log10(ymax) + 1e-12))

    def px(self, x: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return self.left + (x - self.x0) / span * (self.width - self.left - self.right)

    def py(self, y: float) -> float:
        """Pixel row of ``y``; a zero or a value below the axis is drawn on the floor."""
        y = min(max(y, self.y0), self.y1)
        frac = (math.log10(y) - math.log10(self.y0)) / (math.log10(self.y1) - math.log10(self.y0))
        return self.top + (1 - frac) * (self.height - self.top - self.bottom)

    def frame(self, title: str, xlabel: str, ylabel: str, xticks: list[float]) -> list[str]:
        """Axes, decade grid lines, tick labels and the title, as SVG elements."""
        w, h, L, R, T, B = self.width, self.height, self.left, self.right, self.top, self.bottom
        out = [f'<text x="{L}" y="18" class="t">{_e(title)}</text>',
               f'<rect x="{L}" y="{T}" width="{w - L - R}" height="{h - T - B}" fill="none" stroke="#d0d7de"/>']
        d = math.floor(math.log10(self.y0))
        while 10 ** d <= self.y1 * 1.0001:
            y = self.py(10 ** d)
            out.append(f'<line x1="{L}" x2="{w - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eaeef2"/>')
            out.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">1e{d}</text>')
            d += 1
        for x in xticks:
            out.append(f'<text x="{self.px(x):.1f}" y="{h - B + 16}" text-anchor="middle">{_e(f"{x:g}")}</text>')
        out.append(f'<text x="{(L + w - R) / 2:.0f}" y="{h - 6}" text-anchor="middle">{_e(xlabel)}</text>')
        out.append(f'<text transform="translate(14,{(T + h - B) / 2:.0f}) rotate(-90)" text-anchor="middle">'
                   f'{_e(ylabel)}</text>')
        return out

    def hline(self, y: float, label: str, colour: str) -> list[str]:
        py = self.py(y)
        return [f'<line x1="{self.left}" x2="{self.width - self.right}" y1="{py:.1f}" y2="{py:.1f}" '
                f'stroke="{colour}" stroke-dasharray="5,4"/>',
                f'<text x="{self.width - self.right - 4}" y="{py - 4:.1f}" text-anchor="end" fill="{colour}">'
                f'{_e(label)}</text>']

    def legend(self, items: list[tuple[str, str, str]]) -> list[str]:
        """``(shape, colour, label)`` rows right of the plot; shape one of square, dot, diamond, ring, bar."""
        x = self.width - self.right + 14
        out = []
        for k, (shape, colour, label) in enumerate(items):
            y = self.top + 10 + 18 * k
            out.append(_marker(shape, x, y, colour))
            out.append(f'<text x="{x + 10}" y="{y + 4}">{_e(label)}</text>')
        return out

    def svg(self, parts: list[str], label: str) -> str:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} {self.height}" '
                f'width="{self.width}" height="{self.height}" role="img" aria-label="{_e(label)}">'
                + "".join(parts) + "</svg>")


def _marker(shape: str, x: float, y: float, colour: str, title: str = "") -> str:
    t = f"<title>{_e(title)}</title>" if title else ""
    if shape == "square":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{colour}">{t}</rect>'
    if shape == "diamond":
        return (f'<path d="M{x:.1f} {y - 5:.1f}L{x + 5:.1f} {y:.1f}L{x:.1f} {y + 5:.1f}L{x - 5:.1f} {y:.1f}Z" '
                f'fill="{colour}">{t}</path>')
    if shape == "ring":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="none" stroke="{colour}" stroke-width="2">{t}</circle>'
    if shape == "bar":
        return f'<rect x="{x - 3:.1f}" y="{y - 6:.1f}" width="6" height="12" fill="{colour}" opacity="0.6">{t}</rect>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}">{t}</circle>'


def _layer_ticks(layers: list[int]) -> list[float]:
    step = max(1, math.ceil(len(layers) / 15))
    return [float(x) for x in layers[::step]]


def _bound_colour(c: ClaimRow) -> str:
    """Certified colour only for a certified tier; vacuous bounds in the vacuous colour."""
    if c.vacuous:
        return COLOURS["vacuous"]
    return COLOURS.get(c.tier, COLOURS["empirical"]) if c.tier != CERTIFIED else COLOURS["certified"]


def plot_bounds(claims: tuple[ClaimRow, ...], quantity: str = "TV") -> str:
    """Per layer, log scale: the claim's bound (coloured by tier; a ring when vacuous), the
    runner-up form (the tightest other one, not claimed), and the realized maximum; for TV claims the line
    TV = 1, at or above which a bound is vacuous. ``quantity`` names the bounded error."""
    layers = [c.layer for c in claims]
    ys = [v for c in claims for v in (c.realized, c.bound.value if c.bound else None,
                                      c.runner_up.value if c.runner_up else None) if v is not None]
    tv = quantity == "TV"
    ax = Axes.for_values(min(layers) - 0.5, max(layers) + 0.5, ys + ([1.0] if tv else []))
    parts = ax.frame(f"{quantity} bound vs realized {quantity} per layer (log scale)", "layer", quantity,
                     _layer_ticks(layers))
    if tv:
        parts += ax.hline(1.0, "TV = 1: a bound at or above says nothing", COLOURS["vacuous"])
    for c in claims:
        x = ax.px(c.layer)
        if c.runner_up is not None:
            parts.append(_marker("diamond", x + 6, ax.py(c.runner_up.value), COLOURS["runner_up"],
                                 f"{c.id} runner-up {c.runner_up_form} {c.runner_up.text} (not claimed)"))
        if c.bound is not None:
            shape = "ring" if c.vacuous else "square"
            label = "vacuous" if c.vacuous else c.tier
            parts.append(_marker(shape, x, ax.py(c.bound.value), _bound_colour(c),
                                 f"{c.id} bound {c.bound.text} ({label}, {c.form})"))
        if c.realized is not None:
            parts.append(_marker("dot", x - 6, ax.py(c.realized), COLOURS["realized"],
                                 f"{c.id} realized {quantity} max {c.realized:.6g}"))
    tiers = sorted({c.tier for c in claims if c.bound is not None and not c.vacuous})
    items = [("square", COLOURS.get(t, COLOURS["empirical"]), f"bound ({t})") for t in tiers]
    if any(c.vacuous for c in claims):
        items.append(("ring", COLOURS["vacuous"], "bound (vacuous)"))
    if any(c.runner_up for c in claims):
        items.append(("diamond", COLOURS["runner_up"], "runner-up form"))
    items.append(("dot", COLOURS["realized"], "realized max"))
    return ax.svg(parts + ax.legend(items), f"{quantity} bound and realized {quantity} per layer")


def plot_tightness(claims: tuple[ClaimRow, ...]) -> str:
    """Per layer, log scale: tightness = bound / realized TV of the claim (and of the runner-up form)."""
    layers = [c.layer for c in claims]
    box = {c.layer: (c.runner_up_tightness, c.runner_up_form) for c in claims if c.runner_up_tightness}
    ys = [c.tightness for c in claims if c.tightness] + [t for t, _ in box.values()]
    ax = Axes.for_values(min(layers) - 0.5, max(layers) + 0.5, ys + [1.0], lo=1e-1)
    parts = ax.frame("Tightness ratio: bound / realized TV (log scale; 1 = exact)", "layer", "ratio",
                     _layer_ticks(layers))
    parts += ax.hline(1.0, "ratio 1", COLOURS["realized"])
    for c in claims:
        if c.tightness:
            parts.append(_marker("square", ax.px(c.layer), ax.py(c.tightness), _bound_colour(c),
                                 f"{c.id} tightness {c.tightness:.2f}"))
        if c.layer in box:
            parts.append(_marker("diamond", ax.px(c.layer) + 6, ax.py(box[c.layer][0]), COLOURS["runner_up"],
                                 f"{c.id} runner-up {box[c.layer][1]} tightness {box[c.layer][0]:.2f}"))
    items = [("square", COLOURS.get(t, COLOURS["empirical"]), f"claim ({t})")
             for t in sorted({c.tier for c in claims if c.tightness and not c.vacuous})]
    if any(c.vacuous and c.tightness for c in claims):
        items.append(("square", COLOURS["vacuous"], "claim (vacuous)"))
    if box:
        items.append(("diamond", COLOURS["runner_up"], "runner-up form"))
    return ax.svg(parts + ax.legend(items), "tightness ratio per layer")


def plot_writes(writes: tuple[WriteStats, ...], tensor: str) -> str:
    """Per layer, log scale: min..max bars with the mean of the residual ``||D||`` and the witness ``W``."""
    ws = [w for w in writes if w.tensor == tensor]
    layers = [w.layer for w in ws]
    ys = [v for w in ws for v in (w.residual.min, w.residual.max, w.witness.min, w.witness.max)]
    ax = Axes.for_values(min(layers) - 0.5, max(layers) + 0.5, ys)
    parts = ax.frame(f"{tensor}: write residual ||D|| and band witness W per entry (min-max, mean; log scale)",
                     "layer", "L2 norm", _layer_ticks(layers))
    for w in ws:
        for s, colour, dx, name in ((w.residual, COLOURS["residual"], -4, "residual"),
                                    (w.witness, COLOURS["witness"], 4, "witness")):
            x = ax.px(w.layer) + dx
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{ax.py(s.min):.1f}" y2="{ax.py(s.max):.1f}" '
                         f'stroke="{colour}" stroke-width="3" opacity="0.55"/>')
            parts.append(_marker("dot", x, ax.py(s.mean), colour,
                                 f"L{w.layer:02d} {tensor} {name}: min {s.min:.4g}, mean {s.mean:.4g}, "
                                 f"max {s.max:.4g} ({s.n} entries)"))
    items = [("dot", COLOURS["residual"], "residual ||D||"), ("dot", COLOURS["witness"], "witness W")]
    return ax.svg(parts + ax.legend(items), f"{tensor} residual and witness per layer")


def plot_conservativeness(writes: tuple[WriteStats, ...], bands: int) -> str:
    """Per layer and tensor: W / ||D|| (min..max, mean), between 1 and sqrt(bands) by construction."""
    ws = [w for w in writes if w.conservativeness is not None]
    tensors = sorted({w.tensor for w in ws})
    layers = sorted({w.layer for w in ws})
    ys = [v for w in ws for v in (w.conservativeness.min, w.conservativeness.max)]  # type: ignore[union-attr]
    ax = Axes.for_values(min(layers) - 0.5, max(layers) + 0.5, ys + [1.0, math.sqrt(bands)], lo=0.1)
    parts = ax.frame("Witness conservativeness W / ||D|| per entry (min-max, mean; log scale)", "layer", "W / ||D||",
                     _layer_ticks(layers))
    parts += ax.hline(1.0, "1: W >= ||D|| always", COLOURS["realized"])
    parts += ax.hline(math.sqrt(bands), f"sqrt(bands) = {math.sqrt(bands):g}", COLOURS["vacuous"])
    palette = [COLOURS["residual"], COLOURS["witness"], COLOURS["empirical"], COLOURS["certified"]]
    for k, t in enumerate(tensors):
        colour = palette[k % len(palette)]
        for w in (w for w in ws if w.tensor == t):
            s = w.conservativeness
            assert s is not None
            x = ax.px(w.layer) + (k - (len(tensors) - 1) / 2) * 7
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{ax.py(s.min):.1f}" y2="{ax.py(s.max):.1f}" '
                         f'stroke="{colour}" stroke-width="3" opacity="0.55"/>')
            parts.append(_marker("dot", x, ax.py(s.mean), colour,
                                 f"L{w.layer:02d} {t}: W/||D|| min {s.min:.3f}, mean {s.mean:.3f}, max {s.max:.3f}"))
    items = [("dot", palette[k % len(palette)], t) for k, t in enumerate(tensors)]
    return ax.svg(parts + ax.legend(items), "witness conservativeness per layer")


def plot_next_token_tv(requests: tuple[RequestReading, ...], tolerance: float) -> str:
    """Per generated step and request, log scale: TV between the served and the uncompressed
    next-token distributions (a reading), with the run's tolerance."""
    steps = max(len(r.next_token_tv) for r in requests)
    ys = [v for r in requests for v in r.next_token_tv] + [tolerance]
    ax = Axes.for_values(0, max(steps - 1, 1), ys)
    parts = ax.frame("End to end: next-token TV, served vs uncompressed, per step (a reading; log scale)",
                     "generated step", "TV", [float(s) for s in range(0, steps, max(1, math.ceil(steps / 15)))])
    parts += ax.hline(tolerance, f"tolerance {tolerance:g}", COLOURS["vacuous"])
    palette = [COLOURS["residual"], COLOURS["witness"], COLOURS["empirical"], COLOURS["certified"], COLOURS["realized"]]
    items = []
    for k, r in enumerate(requests):
        colour = palette[k % len(palette)]
        pts = " ".join(f"{ax.px(s):.1f},{ax.py(v):.1f}" for s, v in enumerate(r.next_token_tv))
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        for s, v in enumerate(r.next_token_tv):
            parts.append(_marker("dot", ax.px(s), ax.py(v), colour, f"request {r.index} step {s}: TV {v:.3g}"))
        items.append(("dot", colour, f"request {r.index}"))
    return ax.svg(parts + ax.legend(items[:12]), "next-token TV per step")


# ----------------------------------------------------------------------------- HTML

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1f2328;margin:24px auto;
max-width:1160px;padding:0 16px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}td,th{border:1px solid #d0d7de;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{font-size:16px;padding:10px 14px;border-radius:6px;margin:12px 0;font-weight:600}
.pass{background:#dafbe1;border:1px solid #1a7f37}.fail{background:#ffebe9;border:1px solid #cf222e}
.tier{display:inline-block;padding:0 6px;border-radius:10px;font-size:12px;color:#fff}
.tier-certified{background:#1a7f37}.tier-empirical{background:#bc4c00}.tier-partial{background:#8250df}
.tier-UNVERIFIED{background:#cf222e}
.vac{display:inline-block;padding:0 6px;border-radius:10px;font-size:12px;background:#cf222e;color:#fff}
pre{background:#f6f8fa;padding:8px;white-space:pre-wrap;font-size:12px}svg{display:block;margin:8px 0;max-width:100%;height:auto}
svg text{font-size:11px;fill:#1f2328}svg text.t{font-size:13px;font-weight:600}.note{color:#59636e}
"""


def _table(head: list[str] | None, rows: list[list[str]], numeric: set[int] | None = None) -> str:
    """An HTML table (``head`` None: the first cell of each row is its header); cells are HTML already."""
    numeric = numeric or set()
    if head is None:
        return "<table><tbody>" + "".join(f"<tr><th>{_e(r[0])}</th><td>{r[1]}</td></tr>" for r in rows) + \
            "</tbody></table>"
    h = "".join(f"<th>{_e(x)}</th>" for x in head)
    body = "".join("<tr>" + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def _tier(t: str) -> str:
    return f'<span class="tier tier-{_e(t)}">{_e(t)}</span>'


def _bound_cell(b: Bound | None, vacuous: bool) -> str:
    """The bound rounded up at 6 places; a vacuous bound is marked so (it never reads as certified)."""
    if b is None:
        return "-"
    return f'{_e(b.text)} <span class="vac">vacuous</span>' if vacuous else _e(b.text)


def _f(x: float | None, fmt: str = "{:.6f}") -> str:
    return "-" if x is None else _e(fmt.format(x))


def render_html(rep: Report) -> str:
    """The whole page (a pure function of the report)."""
    h = rep.header
    kernel = ("Coq: kernel-checked every claim theorem" if h.coq_checked else "Coq: not every claim theorem was "
              "kernel-checked") + "; " + ("Lean: kernel-checked" if h.lean_checked else "Lean: not checked")
    head_rows = [
        ["model", _e(f"{h.model} ({h.family}, memory class {h.memory_class}, {h.num_layers} layers)")],
        ["codec", _e(f"{h.codec}, {h.bands} bands, " + ("keys and values compressed" if h.compress_values
                                                         else "keys only (values exact)"))],
        ["prompts", "<ol>" + "".join(f"<li>{_e(p)}</li>" for p in h.prompts) + "</ol>"
                    + _e(f"{h.max_new_tokens} greedy tokens per prompt at most")],
        *([["query-aligned witness", _e(h.query_aligned)]] if h.query_aligned else []),
        ["witprobe", _e(f"measured with {h.measured_with}; this page rendered with {h.rendered_with}")],
        ["environment", _e(", ".join(f"{k} {v}" for k, v in h.environment))],
        ["kernels", _e(kernel) + "<br>" + _e(h.coq_line) + "<br>" + _e(h.lean_line)],
        ["run.json SHA-256", f"<code>{_e(h.run_sha256)}</code>"],
    ]
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>witprobe report: {_e(h.model)} {_e(h.codec)}</title><style>{CSS}</style></head><body>",
           f"<h1>witprobe report: {_e(h.model)}, {_e(h.codec)}</h1>",
           _table(None, head_rows),
           (f'<div class="verdict fail" id="verdict">NOT VERIFIED: certificate.json is not the certificate '
            "re-derived from run.json; its verdict and tiers are not shown as witprobe's (run "
            "<code>certify check DIR</code>)</div>" + "".join(f'<p class="vac">NOT VERIFIED: {_e(p)}</p>'
                                                             for p in rep.problems)
            if rep.problems else
            f'<div class="verdict {"pass" if rep.verdict == "pass" else "fail"}" id="verdict">verdict: '
            f"{_e(rep.headline)}</div><p class=\"note\">{_e(VERIFIED_NOTE)}</p>"),
           '<p class="note">A pass says the per-layer bounds held on these prompts; it never says the compressed '
           "model behaves like the uncompressed one. What is bounded and what is not is listed below, as "
           "<code>certify show</code> prints it.</p>",
           f"<pre>{_e(rep.cli_summary)}</pre>"]
    for f in rep.failures:
        out.append(f'<p class="vac">FAILED: {_e(f)}</p>')
    tv = rep.tv_claims
    if tv:
        out += ["<h2>Per-layer attention TV: bound vs realized</h2>",
                '<p class="note">Each claim bounds the total variation between the attention distributions over '
                "the exact and the compressed keys, per layer and row. A bound is drawn in the certified colour "
                "only when its tier is certified (a proof kernel checked the theorem stating it); a ring marks a "
                "vacuous bound (TV bound &gt;= 1 says nothing). A grey diamond marks the runner-up: the tightest other "
                "form (the centred bound beside a box claim, say), not claimed. Hover a marker for its value.</p>",
                plot_bounds(tv), plot_tightness(tv),
                _table(["layer", "realized TV max", "bound", "form", "tightness", "tier", "Coq", "Lean", "runner-up form",
                        "runner-up tightness"],
                       [[str(c.layer), _f(c.realized), _bound_cell(c.bound, c.vacuous), _e(c.form or "-"),
                         _f(c.tightness, "{:.2f}"), _tier(c.tier), _e(c.coq), _e(c.lean),
                         _bound_cell(c.runner_up, c.runner_up_vacuous) + (f" {_e(c.runner_up_form)}" if c.runner_up else ""),
                         _f(c.runner_up_tightness, "{:.2f}")]
                        for c in tv], numeric={0, 1, 2, 4, 8, 9})]
    outs = [(k, q) for k, q in (("attn_out", "||y - y_hat||"), ("attn_out_proj", "||W_o (y - y_hat)||"))
            if any(c.kind == k for c in rep.claims)]
    if outs:
        out += ["<h2>Attention output: bound vs realized</h2>",
                '<p class="note">The values\' effect: the error of the attention output per row, before and after '
                "the output projection W_o, bounded from the layer's TV bound and the value residuals. These "
                "bounds are empirical (no kernel-checked theorem states them).</p>"]
        out += [plot_bounds(tuple(c for c in rep.claims if c.kind == k), q) for k, q in outs]
    tensors = sorted({w.tensor for w in rep.writes})
    if tensors:
        out.append("<h2>Write residuals and witnesses</h2>")
        out.append('<p class="note">Per compressed entry: the residual ||D|| = ||x - x_hat|| and the band witness '
                   "W that the bounds use in its place. W &gt;= ||D|| always holds (self-check), and W / ||D|| "
                   "is at most sqrt(bands).</p>")
        out += [plot_writes(rep.writes, t) for t in tensors]
        if any(w.conservativeness for w in rep.writes):
            out.append(plot_conservativeness(rep.writes, h.bands))
    out += ["<h2>Coverage</h2>",
            _table(["model", "family", "memory class", "layers covered", "headline reading"],
                   [[_e(x) for x in row] for row in rep.coverage])]
    out += ["<h2>Claims: tier and kernel status</h2>",
            '<p class="note">Tier <code>certified</code> only when the bound is not vacuous and Coq or Lean '
            "kernel-checked the theorem whose statement is the claim, and the kernel decided its number: the same "
            "statement with the bound lowered to max(realized, B/2) was rejected (the mutation guard). For a box "
            "claim the kernel recomputes the bound from the rows the run shipped to it (per-bucket masses of the "
            "served distribution and per-key radii, which stay measured); for the centred, plain and e-forms it "
            "checks the per-run inequality (tanh(C/2) &lt;= B, ...). Otherwise <code>empirical</code>, with the "
            "reason.</p>",
            _table(["claim", "kind", "layer", "bound", "realized", "tightness", "tier", "Coq", "Lean", "reason"],
                   [[_e(c.id), _e(c.kind), str(c.layer), _bound_cell(c.bound, c.vacuous), _f(c.realized),
                     _f(c.tightness, "{:.2f}"), _tier(c.tier), _e(c.coq), _e(c.lean), _e(c.tier_reason)]
                    for c in rep.claims], numeric={2, 3, 4, 5})]
    out += ["<h2>Self-checks</h2>",
            _table(["counter", "count", "ok", "meaning"],
                   [[_e(s.name), str(s.count), "yes" if s.ok else '<span class="vac">NO</span>', _e(s.meaning)]
                    for s in rep.self_checks], numeric={1})]
    if rep.tasks:
        out += ['<h2 id="tasks">Task readings (compressed vs uncompressed; readings, no bound)</h2>',
                _table(["task", "metric", "items", "compressed", "uncompressed", "damage", "what"],
                       [[_e(t["task"]), _e(t["metric"]), str(t["items"]), f"{t['compressed']:.4f}",
                         f"{t['uncompressed']:.4f}",
                         (f"{100 * damage(t):+.1f}%" if t["metric"] == "perplexity" else f"{damage(t):+.3f}"),
                         _e(t["description"])] for t in rep.tasks], numeric={2, 3, 4, 5})]
        out += [f'<p class="vac">{_e(line)}</p>' for line in format_tasks(list(rep.tasks))
                if line.startswith("TASK DAMAGE")]
    e = rep.end_to_end
    out += ["<h2>End to end (readings, no bound)</h2>", f"<p>{_e(rep.end_to_end_line)}</p>"]
    if e.greedy_total:
        out.append(f'<p id="greedy">greedy tokens agree: {e.greedy_position_matches}/{e.greedy_total} '
                   f"position-wise, {e.greedy_agreeing_prefix}/{e.greedy_total} in the agreeing prefix</p>")
    if rep.requests and any(r.next_token_tv for r in rep.requests):
        out.append(plot_next_token_tv(rep.requests, rep.tv_tolerance))
    if rep.requests:
        out.append(_table(["request", "prompt tokens", "generated", "agreeing prefix", "position matches",
                           "next-token TV max"],
                          [[str(r.index), str(r.prompt_tokens), str(r.served), _f(r.agreeing_prefix, "{:d}"),
                            _f(r.position_matches, "{:d}"), _f(max(r.next_token_tv, default=None), "{:.4f}")]
                           for r in rep.requests], numeric={0, 1, 2, 3, 4, 5}))
    out += ["<h2>The table <code>certify show</code> prints</h2>",
            f"<details><summary>per-layer table</summary><pre>{_e(rep.cli_table)}</pre></details>",
            "</body></html>", ""]
    return "\n".join(out)


def write_report(directory: Path, out: Path | None = None, render: Callable[[Report], str] = render_html,
                 force: bool = False) -> tuple[Path, tuple[str, ...]]:
    """Validate, render, then write ``out`` (default ``DIR/report.html``) through a temporary file
    renamed into place (:mod:`witprobe.safe_output`); returns the path written.

    Returns the path written and the problems that make the certificate NOT VERIFIED (empty: it verifies).
    ``DIR/report.html`` is recorded in the run directory's manifest and replaced only while it is
    the page witprobe wrote; an ``--out FILE`` that exists is replaced only with ``force``."""
    from witprobe.certify.pipeline import RUN_TOOL
    from witprobe.safe_output import check_into, check_new_file, write_file, write_into

    directory = Path(directory)
    if out is None:
        check_into(directory, [REPORT_FILE])
    else:
        check_new_file(out, force)
    rep = load_report(directory)  # every read and check before anything is written
    text = render(rep)
    if out is None:
        return write_into(directory, REPORT_FILE, text, RUN_TOOL), rep.problems
    return write_file(out, text, force=force), rep.problems
