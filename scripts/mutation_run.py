"""A small, bounded mutation run over the trust-boundary code: which mutants do the tests kill?

``python scripts/mutation_run.py [--max-mutants N] [--budget-s S] [--seed K] [--out FILE]``;
``python scripts/mutation_run.py --show FILE:SITE`` prints one mutant as a diff (``SITE``: the
index of the site among the file's sites, the report's ``site`` column), to re-apply it by hand.

Targets: ``calculus/``, ``certify/derive.py``, ``certify/derive_values.py``, ``certify/coverage.py``,
``kinds/base.py``, ``self_checks.py``, ``probe/observer.py`` and ``formal/obligations.py``.
Each mutant is one AST edit of one site (operators below); the mutated package lives in a scratch
copy (the working tree is never written), and the tests that guard the target file run against
it in a child forked from a parent that has already imported torch, transformers and pytest (so
a mutant costs its tests, not an interpreter start). A mutant is *killed* when a test fails or
errors, *survived* when every selected test passes, *timeout* when its tests exceed the
per-mutant limit (counted as killed: the mutant changed behaviour), *not run* when the overall
budget ran out first.

The tests a mutant runs are those that execute its line in a traced baseline run. A line executed
while the tests are collected (module level: constants, tables, class bodies, the checks of a
dataclass built at import) runs every selected test of its file; a line nothing executes is
*uncovered* (a survivor, run against nothing). The target sources are read once, at the start: a
file edited while the run goes on does not shift its sites.

Operators:

- ``if-false``: ``if c:`` becomes ``if False:`` (a check that never fires);
- ``drop-call``: a call statement (``failures.append(...)``, ``acc.count(...)``) becomes ``pass``;
- ``drop-raise``: a ``raise`` becomes ``pass``;
- ``cmp``: ``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``in``/``not in``, ``is``/``is not`` swapped;
- ``bool``: ``and``/``or`` swapped; ``not``: ``not x`` becomes ``x``;
- ``arith``: ``+``/``-`` and ``*``/``/`` swapped;
- ``const``: ``True``/``False`` swapped, an integer ``n`` becomes ``n + 1``.

Mutants are sampled without replacement (seeded, stratified by file in proportion to its sites,
``if-false``/``drop-call``/``drop-raise``/``cmp`` first since they are the ones that can switch a
soundness check off). The report (Markdown) lists every surviving mutant with its file, line,
operator, site and the line as written, and flags survivors on lines that touch a self-check
(``viol``, ``beaten``, ``failures``, ``fail closed``, ``raise``, ``vacuous``, ``missing``) for
review: none of those may survive. The flag reads the site's own line only (an ``if`` whose
``raise`` is on the next line is not flagged), so every survivor needs a look. The triage section
of ``bench/mutation_run.md`` is written by hand after a run: a rerun overwrites the file.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "python" / "witprobe"
TARGETS = sorted([p.relative_to(PKG).as_posix() for p in (PKG / "calculus").glob("*.py") if p.name != "__init__.py"]
                 + ["certify/derive.py", "certify/derive_values.py", "certify/coverage.py", "kinds/base.py",
                    "self_checks.py", "probe/observer.py", "formal/obligations.py", "typed_json.py",
                    "certify/run_record.py"])
CALCULUS_TESTS = ["tests/test_calculus.py", "tests/test_rounding.py", "tests/test_obligations.py",
                  "tests/test_self_checks.py", "tests/test_lean_names.py"]
TESTS = {
    "calculus/float_error.py": ["tests/test_trust_boundary.py", "tests/test_self_checks.py"],
    "certify/derive.py": ["tests/test_self_checks.py", "tests/test_trust_boundary.py", "tests/test_certified_path.py"],
    "probe/observer.py": ["tests/probe/test_observer_faults.py", "tests/test_meters.py", "tests/test_query_aligned.py",
                          "tests/test_batch_padding.py"],
    "formal/obligations.py": ["tests/test_obligations.py", "tests/test_self_checks.py"],
    "certify/derive_values.py": ["tests/test_output_bound.py", "tests/test_self_checks.py"],
    "certify/coverage.py": ["tests/test_self_checks.py", "tests/test_memory_kinds.py"],
    "kinds/base.py": ["tests/test_self_checks.py", "tests/test_memory_kinds.py"],
    "self_checks.py": ["tests/test_self_checks.py", "tests/probe/test_gate.py", "tests/test_memory_kinds.py"],
    "typed_json.py": ["tests/test_run_record.py", "tests/test_self_checks.py"],
    "certify/run_record.py": ["tests/test_run_record.py", "tests/test_self_checks.py"],
}
# deselected: tests that need a real proof kernel (the Coq test double covers the same path) or run a
# model for a minute (SmolLM2; the committed-run and synthetic tests of the same file cover the same
# derivation)
SLOW_TESTS = ("tests/test_certified_path.py::test_the_real_kernel_certifies_a_committed_run_and_check_confirms_it",
              "tests/test_output_bound.py::test_int4_values_compressed_no_output_bound_is_beaten_on_any_layer",
              "tests/test_output_bound.py::test_derive_fails_when_the_realized_output_error_beats_the_bound")
PRIORITY = ("if-false", "drop-call", "drop-raise", "cmp")
IMPORT = "<import>"  # the line map's test id of a line executed while the tests are collected
SOUNDNESS_WORDS = ("viol", "beaten", "failures", "fail closed", "raise", "vacuous", "missing", "mismatch", "flip")
CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
ARITH_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}


def tests_for(target: str) -> list[str]:
    """The test files that guard ``target``, plus the slow node ids to deselect from them."""
    files = TESTS.get(target, CALCULUS_TESTS)
    return files + [t for t in SLOW_TESTS if t.split("::")[0] in files]


def tests_files(tests: list[str]) -> list[str]:
    return [t for t in tests if "::" not in t]


@dataclass(frozen=True)
class Site:
    """One mutable place: ``target`` file, ``index`` among its sites, operator, line."""

    target: str
    index: int
    op: str
    line: int
    end_line: int = 0


class _Mutator(ast.NodeTransformer):
    """Enumerates sites in a fixed order; with ``apply`` set, mutates exactly that site."""

    def __init__(self, apply: int | None = None) -> None:
        self.sites: list[tuple[str, int, int]] = []
        self.apply = apply

    def _site(self, op: str, node: ast.AST) -> bool:
        span = node.test if isinstance(node, ast.If) else node  # an if: its condition, not its body
        self.sites.append((op, getattr(span, "lineno", 0), getattr(span, "end_lineno", 0) or getattr(span, "lineno", 0)))
        return self.apply == len(self.sites) - 1

    # annotations and docstrings are not behaviour
    def visit_arg(self, node: ast.arg) -> ast.AST:
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.body = self._body(node.body)
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.body = self._body(node.body)
        return node

    def visit_Module(self, node: ast.Module) -> ast.AST:
        node.body = self._body(node.body)
        return node

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out = []
        for i, st in enumerate(body):
            if i == 0 and isinstance(st, ast.Expr) and isinstance(getattr(st, "value", None), ast.Constant):
                out.append(st)  # docstring
                continue
            res = self.visit(st)
            out.extend(res if isinstance(res, list) else [res])
        return out

    def visit_If(self, node: ast.If) -> ast.AST:
        if self._site("if-false", node):
            node.test = ast.Constant(False)
        else:
            node.test = self.visit(node.test)
        node.body = self._body(node.body)
        node.orelse = self._body(node.orelse)
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        node.iter = self.visit(node.iter)
        node.body = self._body(node.body)
        node.orelse = self._body(node.orelse)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        node.test = self.visit(node.test)
        node.body = self._body(node.body)
        return node

    def visit_With(self, node: ast.With) -> ast.AST:
        node.body = self._body(node.body)
        return node

    def visit_Try(self, node: ast.Try) -> ast.AST:
        node.body = self._body(node.body)
        for h in node.handlers:
            h.body = self._body(h.body)
        node.orelse = self._body(node.orelse)
        node.finalbody = self._body(node.finalbody)
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if isinstance(node.value, ast.Call) and self._site("drop-call", node):
            return ast.copy_location(ast.Pass(), node)
        node.value = self.visit(node.value)
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        if self._site("drop-raise", node):
            return ast.copy_location(ast.Pass(), node)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        node.left = self.visit(node.left)
        node.comparators = [self.visit(c) for c in node.comparators]
        swap = CMP_SWAP.get(type(node.ops[0]))
        if swap is not None and self._site("cmp", node):
            node.ops = [swap()] + node.ops[1:]
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        node.values = [self.visit(v) for v in node.values]
        if self._site("bool", node):
            node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        node.operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not) and self._site("not", node):
            return node.operand
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        node.left, node.right = self.visit(node.left), self.visit(node.right)
        swap = ARITH_SWAP.get(type(node.op))
        if swap is not None and self._site("arith", node):
            node.op = swap()
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        v = node.value
        if isinstance(v, bool):
            if self._site("const", node):
                return ast.copy_location(ast.Constant(not v), node)
        elif isinstance(v, int) and self._site("const", node):
            return ast.copy_location(ast.Constant(v + 1), node)
        return node


_SOURCES: dict[str, str] = {}


def source(target: str) -> str:
    """The text of ``target`` as first read in this run (a later edit of the file is not seen)."""
    if target not in _SOURCES:
        _SOURCES[target] = (PKG / target).read_text(encoding="utf-8")
    return _SOURCES[target]


def sites_of(target: str) -> list[Site]:
    tree = ast.parse(source(target))
    m = _Mutator()
    m.visit(tree)
    return [Site(target, i, op, line, end) for i, (op, line, end) in enumerate(m.sites)]


def mutant_source(site: Site) -> str:
    tree = ast.parse(source(site.target))
    m = _Mutator(apply=site.index)
    tree = ast.fix_missing_locations(m.visit(tree))
    return ast.unparse(tree) + "\n"


def source_line(site: Site) -> str:
    """The site's line as written (before the mutation), for the report."""
    original = source(site.target).splitlines()
    text = original[site.line - 1].strip() if 0 < site.line <= len(original) else ""
    return text


def sample(all_sites: list[Site], n: int, seed: int) -> list[Site]:
    """``n`` sites: priority operators first, stratified by file, seeded."""
    rng = random.Random(seed)
    by_file: dict[str, list[Site]] = {}
    for s in all_sites:
        by_file.setdefault(s.target, []).append(s)
    total = len(all_sites)
    chosen: list[Site] = []
    for target, sites in sorted(by_file.items()):
        quota = max(1, round(n * len(sites) / total))
        pri = [s for s in sites if s.op in PRIORITY]
        rest = [s for s in sites if s.op not in PRIORITY]
        rng.shuffle(pri)
        rng.shuffle(rest)
        take_pri = min(len(pri), max(1, (2 * quota) // 3))
        chosen += pri[:take_pri] + rest[: quota - take_pri]
    rng.shuffle(chosen)
    return chosen[:n]


class _LineMap:
    """pytest plugin: which test (node id) executes which line of the target files."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files  # absolute scratch path -> target
        self.current = IMPORT
        self.lines: dict[str, dict[int, set[str]]] = {}

    def _global(self, frame, event, arg):  # noqa: ANN001 - sys.settrace protocol
        return self._local if frame.f_code.co_filename in self.files else None

    def _local(self, frame, event, arg):  # noqa: ANN001
        if event == "line":
            target = self.files[frame.f_code.co_filename]
            self.lines.setdefault(target, {}).setdefault(frame.f_lineno, set()).add(self.current)
        return self._local

    def pytest_runtest_setup(self, item) -> None:  # noqa: ANN001
        self.current = item.nodeid
        sys.settrace(self._global)

    def pytest_runtest_teardown(self, item) -> None:  # noqa: ANN001
        sys.settrace(None)
        self.current = IMPORT


_CHILDREN: set[int] = set()  # forked children still running (killed when the run is stopped)


def _run_child(scratch: Path, args: list[str], timeout_s: float, log: Path | None = None,
               line_map: Path | None = None) -> str:
    """Fork; the child imports the scratch witprobe fresh and runs pytest ``args``. Returns the outcome.

    With ``line_map`` the child also records which test executes which target line (JSON).
    """
    pid = os.fork()
    if pid == 0:  # child
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's cleanup handler is not the child's
        try:
            os.chdir(ROOT)
            sink = os.open(str(log) if log else os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(sink, 1)
            os.dup2(sink, 2)
            for name in [m for m in sys.modules if m == "witprobe" or m.startswith("witprobe.")]:
                del sys.modules[name]
            sys.path.insert(0, str(scratch / "python"))
            import pytest
            import torch

            torch.set_num_threads(1)
            plugins = []
            if line_map is not None:
                files = {str((scratch / "python" / "witprobe" / t).resolve()): t for t in TARGETS}
                plugins.append(_LineMap(files))
                sys.settrace(plugins[0]._global)  # collection imports the targets: module-level lines
            code = pytest.main(["-x", "-q", "-p", "no:cacheprovider", *args], plugins=plugins)
            sys.settrace(None)
            if line_map is not None:
                lines = plugins[0].lines
                line_map.write_text(json.dumps({t: {str(n): sorted(ids) for n, ids in ls.items()}
                                                for t, ls in lines.items()}))
        except BaseException:  # noqa: BLE001 - any crash of a mutant is a kill
            code = 99
        os._exit(int(code))
    _CHILDREN.add(pid)
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            _CHILDREN.discard(pid)
            code = os.waitstatus_to_exitcode(status)
            return "survived" if code == 0 else "killed"
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            _CHILDREN.discard(pid)
            return "timeout"
        time.sleep(0.05)


def _selection(tests: list[str]) -> list[str]:
    """pytest arguments for a list of files plus slow node ids to deselect."""
    return [a for t in tests if t in SLOW_TESTS for a in ("--deselect", t)] + tests_files(tests)


def covering_tests(site: Site, lines: dict[str, dict[str, list[str]]]) -> list[str]:
    """pytest arguments: the node ids of the tests that execute a line of the site's span (from the
    traced baseline), or every selected test of the target when a line of it runs at collection
    (module level); empty when nothing executes it."""
    by_line = lines.get(site.target, {})
    ids = set()
    for n in range(site.line, max(site.line, site.end_line) + 1):
        ids.update(by_line.get(str(n), ()))
    if IMPORT in ids:
        return _selection(tests_for(site.target))
    return sorted(ids)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-mutants", type=int, default=80)
    ap.add_argument("--budget-s", type=float, default=1150.0, help="stop starting mutants after this many seconds")
    ap.add_argument("--per-mutant-s", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="comma-separated targets (default: all)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "mutation_run.md"))
    ap.add_argument("--show", default="", metavar="FILE:SITE", help="print one mutant as a diff and exit")
    args = ap.parse_args(argv)
    if args.show:
        target, _, index = args.show.rpartition(":")
        site = sites_of(target)[int(index)]
        before = (ast.unparse(ast.parse(source(target))) + "\n").splitlines(keepends=True)
        print(f"{target}:{site.line} {site.op}")
        sys.stdout.writelines(difflib.unified_diff(before, mutant_source(site).splitlines(keepends=True),
                                                   f"a/{target}", f"b/{target}", n=1))
        return 0
    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WITPROBE_COQ_LIB", str(ROOT / "coq"))  # the scratch copy has no coq/ beside it
    targets = [t for t in TARGETS if not args.only or t in args.only.split(",")]
    tree = tree_state(targets)  # before the run: the sources below are read now
    all_sites = [s for t in targets for s in sites_of(t)]
    chosen = sample(all_sites, args.max_mutants, args.seed)
    import pytest  # noqa: F401 - imported once in the parent, shared by every forked child
    import torch  # noqa: F401
    import transformers  # noqa: F401
    import hypothesis  # noqa: F401

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup below on a plain kill
    scratch = Path(tempfile.mkdtemp(prefix="witprobe-mutants-"))
    results: list[tuple[Site, str, float]] = []
    t0 = time.monotonic()
    try:
        shutil.copytree(PKG, scratch / "python" / "witprobe")
        for t in targets:  # the sources the sites were read from, even if a file changed since
            (scratch / "python" / "witprobe" / t).write_text(source(t), encoding="utf-8")
        log, line_file = scratch / "baseline.log", scratch / "lines.json"
        group = sorted({t for tg in targets for t in tests_for(tg)})
        baseline = _run_child(scratch, _selection(group), 1800, log, line_file)
        if baseline != "survived":
            tail = log.read_text(errors="replace").splitlines()[-15:]
            print(f"mutation_run: the unmutated tests do not pass ({baseline}); nothing to measure\n"
                  + "\n".join(tail), file=sys.stderr)
            return 2
        lines = json.loads(line_file.read_text())
        print(f"baseline: {time.monotonic() - t0:.0f} s, lines traced in {len(lines)} files", flush=True)
        for i, site in enumerate(chosen):
            if time.monotonic() - t0 > args.budget_s:
                results.append((site, "not run", 0.0))
                continue
            tests = covering_tests(site, lines)
            if not tests:  # no test executes the mutated line: it survives without running anything
                results.append((site, "uncovered", 0.0))
                print(f"[{i + 1}/{len(chosen)}] uncovered {site.target}:{site.line} {site.op}", flush=True)
                continue
            dest = scratch / "python" / "witprobe" / site.target
            dest.write_text(mutant_source(site), encoding="utf-8")
            t = time.monotonic()
            outcome = _run_child(scratch, tests, args.per_mutant_s)
            results.append((site, outcome, time.monotonic() - t))
            dest.write_text(source(site.target), encoding="utf-8")
            n = "all" if "::" not in tests[-1] else len(tests)  # a module-level line runs the whole selection
            print(f"[{i + 1}/{len(chosen)}] {outcome:8s} {site.target}:{site.line} {site.op} ({n} tests)", flush=True)
    finally:
        for pid in list(_CHILDREN):  # a stopped run leaves no child testing a deleted scratch copy
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        shutil.rmtree(scratch, ignore_errors=True)
    wall = time.monotonic() - t0
    Path(args.out).write_text(report(results, all_sites, targets, args, wall, tree), encoding="utf-8")
    print(f"mutation_run: report written to {args.out}")
    return 0


def tree_state(targets: list[str]) -> str:
    """The commit the run measured, and the target and test files that differed from it (uncommitted)."""
    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return ""
    head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    paths = [f"python/witprobe/{t}" for t in targets] + sorted({f for t in targets for f in tests_files(tests_for(t))})
    dirty = [ln[3:] for ln in git("status", "--porcelain", "--", *paths).splitlines() if len(ln) > 3]
    return f"commit {head}" + (f", with uncommitted changes to {', '.join(f'`{d}`' for d in dirty)}" if dirty else "")


def report(results: list[tuple[Site, str, float]], all_sites: list[Site], targets: list[str], args, wall: float,
           tree: str = "") -> str:
    count = {k: sum(1 for _, o, _ in results if o == k)
             for k in ("killed", "timeout", "survived", "uncovered", "not run")}
    ran = count["killed"] + count["timeout"] + count["survived"] + count["uncovered"]
    lines = [
        "# Mutation run",
        "",
        f"Command: `python scripts/mutation_run.py --max-mutants {args.max_mutants} --seed {args.seed}"
        f" --budget-s {args.budget_s:g}" + (f" --only {args.only}" if args.only else "")
        + f"`; {len(all_sites)} sites in {len(targets)} files, {len(results)} sampled, "
        f"wall {wall:.0f} s on one core.",
        "",
        f"Tree: {tree or 'unknown'}. Deselected tests: " + ", ".join(f"`{t}`" for t in SLOW_TESTS) + ".",
        "",
        f"- killed: {count['killed']} (+ {count['timeout']} timeouts, counted as killed)",
        f"- survived: {count['survived']} (+ {count['uncovered']} on lines no selected test executes)",
        f"- not run (budget): {count['not run']}",
        f"- mutation score: {(count['killed'] + count['timeout']) / ran:.1%} of {ran} run" if ran else "- nothing ran",
        "",
        "| file | sites | sampled | killed | survived |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for t in targets:
        rs = [(s, o) for s, o, _ in results if s.target == t]
        lines.append(f"| {t} | {sum(1 for s in all_sites if s.target == t)} | {len(rs)} | "
                     f"{sum(o in ('killed', 'timeout') for _, o in rs)} | "
                     f"{sum(o in ('survived', 'uncovered') for _, o in rs)} |")
    lines += ["", "## Surviving mutants", "",
              "`review` marks a survivor on a line that touches a self-check; each is triaged below the table.", "",
              "| file:line | operator | site | line (before the mutation) | review |",
              "| --- | --- | ---: | --- | --- |"]
    for s, o, _ in sorted(results, key=lambda r: (r[0].target, r[0].line)):
        if o not in ("survived", "uncovered"):
            continue
        text = source_line(s).replace("|", "\\|")
        flag = "review" if any(w in text.lower() for w in SOUNDNESS_WORDS) else ""
        op = s.op + (" (uncovered)" if o == "uncovered" else "")
        lines.append(f"| {s.target}:{s.line} | {op} | {s.index} | `{text}` | {flag} |")
    lines += ["", "## Killed mutants", "", "| file:line | operator | seconds |", "| --- | --- | ---: |"]
    for s, o, dt in sorted(results, key=lambda r: (r[0].target, r[0].line)):
        if o in ("killed", "timeout"):
            lines.append(f"| {s.target}:{s.line} | {s.op}{' (timeout)' if o == 'timeout' else ''} | {dt:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
