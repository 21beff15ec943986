"""Reports of an optimisation folder: the score per iteration with its interval, the Pareto front of a
multi-objective search, the lineage and the verdict on the test split, as a table (``assay report OPT_DIR``), JSON,
or a self-contained HTML page. Works on an unfinished folder too (from the journal)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from assay.optimize.manifest import MANIFEST
from assay.optimize.outputs import read_tables


def is_optimization(path: Path) -> bool:
    """True for an optimisation folder (it holds ``optimization.json``)."""
    return (Path(path) / MANIFEST).is_file()


def load_view(folder: Path) -> dict[str, Any]:
    """Everything a report shows, as plain data."""
    from assay.optimize.manifest import read_manifest

    folder = Path(folder)
    manifest = read_manifest(folder)  # a damaged file is an error naming it and the key, not a traceback
    tables = read_tables(folder)
    summary_path = folder / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else None
    val_trials = [t for t in tables["trials"] if t.get("split") == "val" and t.get("mean") is not None]
    spec = manifest.get("spec") or {}
    return {
        "folder": str(folder),
        "task": (manifest.get("task") or {}).get("name"),
        "strategy": spec.get("strategy"),
        "objectives": spec.get("objectives") or ["score"],
        "status": manifest.get("status"),
        "budget": manifest.get("budget"),
        "trials": tables["trials"],
        "val_trials": val_trials,
        "candidates": tables["candidates"],
        "summary": summary,
        "pareto": (summary or {}).get("pareto") or [],
    }


def _fmt(x: Any, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def trial_rows(view: dict[str, Any]) -> list[list[str]]:
    """Rows of the trials table: trial, origin, candidate, parent, split, n, mean, interval, kept, calls."""
    rows = []
    for t in view["trials"]:
        ci = f"[{_fmt(t.get('ci_low'))}, {_fmt(t.get('ci_high'))}]" if t.get("ci_low") is not None else "-"
        kept = "pruned" if t.get("pruned") else "kept" if t.get("accepted") else "dropped"
        rows.append(
            [str(t.get("trial")), str(t.get("origin") or ""), str(t.get("cid")), str(t.get("parent") or "-"),
             str(t.get("split") or "-"), str(t.get("n")), _fmt(t.get("mean")), ci, kept, str(t.get("calls_used"))]
        )  # fmt: skip
    return rows


HEADERS = ["trial", "origin", "candidate", "parent", "split", "n", "mean", "95% CI", "", "calls"]


def render_text(folder: Path, fmt: str = "rich") -> Any:
    """The report as rich renderables (``rich``), a markdown string or a JSON string."""
    view = load_view(folder)
    if fmt == "json":
        return json.dumps(view, indent=2, ensure_ascii=False, default=str)
    rows = trial_rows(view)
    verdict = (view["summary"] or {}).get("summary") or f"optimisation {view['status']} (no verdict yet)"
    title = f"optimisation of {view['task']} ({view['strategy']}), budget {view['budget']} model calls"
    if fmt == "markdown":
        lines = [f"## {title}", "", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        if view["pareto"]:
            lines += [
                "",
                "Pareto front:",
                *[f"- trial {p['trial']} {p['cid']}: {p['objectives']}" for p in view["pareto"]],
            ]
        return "\n".join([*lines, "", verdict])
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left")
    for h in HEADERS:
        table.add_column(h, justify="right" if h in ("trial", "n", "mean", "calls") else "left")
    for r in rows:
        table.add_row(*[Text(c) for c in r])
    parts: list[Any] = [table]
    if view["pareto"]:
        front = Table(title="Pareto front", title_justify="left")
        front.add_column("trial")
        front.add_column("candidate")
        for name in view["objectives"]:
            front.add_column(name, justify="right")
        for p in view["pareto"]:
            front.add_row(str(p["trial"]), p["cid"], *[_fmt(p["objectives"].get(o), 4) for o in view["objectives"]])
        parts.append(front)
    parts.append(Text(verdict, style="green" if (view["summary"] or {}).get("improved") else "yellow"))
    return parts


# ---- HTML ------------------------------------------------------------------------------------------------------


def _scale(lo: float, hi: float, a: float, b: float) -> Any:
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def score_svg(val_trials: list[dict[str, Any]], width: int = 640, height: int = 260) -> str:
    """Validation score per trial with its interval (error bars); kept candidates filled."""
    if not val_trials:
        return "<p>No validation trials yet.</p>"
    left, right, top, bottom = 48, 16, 12, 36
    xs = _scale(0, max(1, len(val_trials) - 1), left, width - right)
    lows = [float(t["ci_low"]) for t in val_trials if t.get("ci_low") is not None]
    highs = [float(t["ci_high"]) for t in val_trials if t.get("ci_high") is not None]
    lo = min([0.0, *lows])
    hi = max([1.0, *highs])
    ys = _scale(lo, hi, height - bottom, top)
    out = [f'<svg class="opt-score" viewBox="0 0 {width} {height}" role="img" aria-label="score per trial">']
    for tick in (lo, (lo + hi) / 2, hi):
        y = ys(tick)
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
    best = -1.0
    path = []
    for i, t in enumerate(val_trials):
        x, y = xs(i), ys(float(t["mean"]))
        if t.get("ci_low") is not None and t.get("ci_high") is not None:
            out.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{ys(t["ci_low"]):.1f}" y2="{ys(t["ci_high"]):.1f}" class="ci"/>'
            )
        cls = "kept" if t.get("accepted") else "dropped"
        label = html.escape(f"trial {t['trial']} {t['cid']}: {t['mean']:.3f}")
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" class="{cls}"><title>{label}</title></circle>')
        out.append(f'<text x="{x:.1f}" y="{height - bottom + 16}" text-anchor="middle">{int(t["trial"])}</text>')
        if t.get("accepted"):
            best = max(best, float(t["mean"]))
        if best >= 0:
            path.append(f"{x:.1f},{ys(best):.1f}")
    if path:
        out.append(f'<polyline points="{" ".join(path)}" class="best"/>')
    out.append(f'<text x="{width / 2:.0f}" y="{height - 4}" text-anchor="middle">trial</text>')
    out.append("</svg>")
    return "".join(out)


def pareto_svg(trials: list[dict[str, Any]], objectives: list[str], front: list[dict[str, Any]]) -> str:
    """Score against the second objective for every finished trial; the Pareto front highlighted."""
    if len(objectives) < 2:
        return ""
    second = objectives[1]
    pts = [(t, t["objectives"]) for t in trials if isinstance(t.get("objectives"), dict) and t["objectives"]]
    pts = [(t, o) for t, o in pts if o.get("score") is not None and o.get(second) is not None]
    if not pts:
        return ""
    width, height, left, bottom, top, right = 640, 280, 56, 36, 12, 16
    xv = [float(o[second]) for _, o in pts]
    xs = _scale(min(xv), max(xv), left, width - right)
    ys = _scale(0.0, 1.0, height - bottom, top)
    on_front = {p["trial"] for p in front}
    out = [f'<svg class="opt-pareto" viewBox="0 0 {width} {height}" role="img" aria-label="Pareto front">']
    for t, o in pts:
        cls = "front" if t.get("iteration", 0) - 1 in on_front else "trial"
        label = html.escape(f"trial {t['trial']} {t['cid']}: score {o['score']:.3f}, {second} {o[second]:.4g}")
        out.append(
            f'<circle cx="{xs(float(o[second])):.1f}" cy="{ys(float(o["score"])):.1f}" r="5" class="{cls}">'
            f"<title>{label}</title></circle>"
        )
    out.append(f'<text x="{width / 2:.0f}" y="{height - 4}" text-anchor="middle">{html.escape(second)}</text>')
    out.append(f'<text x="12" y="{height / 2:.0f}" transform="rotate(-90 12 {height / 2:.0f})">score</text>')
    out.append("</svg>")
    return "".join(out)


def render_html(folder: Path) -> str:
    """A self-contained HTML page of the optimisation (every model- or data-derived string escaped)."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("assay.optimize", "templates"), autoescape=select_autoescape(["j2"]))
    view = load_view(folder)
    template = env.get_template("optimize.html.j2")
    from markupsafe import Markup

    return template.render(
        view=view,
        headers=HEADERS,
        rows=trial_rows(view),
        score_svg=Markup(score_svg(view["val_trials"])),
        pareto_svg=Markup(pareto_svg(view["trials"], view["objectives"], view["pareto"])),
    )


def write_html(folder: Path, path: Path) -> None:
    """Write the HTML page to ``path``."""
    Path(path).write_text(render_html(folder), encoding="utf-8")


def report_optimization(folder: Path, fmt: str, html_path: Path | None) -> None:
    """What ``assay report OPT_DIR`` prints (and writes, with ``--html``)."""
    import click

    from assay.errors import AssayError

    try:
        out = render_text(folder, fmt)
    except AssayError as err:  # a damaged optimization.json: its message, exit 2 (bad input), no traceback
        raise click.BadParameter(str(err), param_hint="RUN_DIR") from None
    if isinstance(out, str):
        click.echo(out)
    else:
        import sys

        from rich.console import Console

        console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
        for part in out:
            console.print(part)
    if html_path is not None:
        write_html(folder, html_path)
        click.echo(f"HTML report -> {html_path}", err=True)
