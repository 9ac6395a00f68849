"""The question explorer across runs, in the pages ``compare`` and ``leaderboard`` write, and its figure.

The page is the kit's self-contained shell (:func:`locomo_kit.reports.html.render_page`): the markdown
(``compare.md`` / ``leaderboard.md``, flip table included) rendered as HTML, then the explorer over the
cross-run table (:mod:`locomo_kit.reports.question_table`). The table travels inside the page as gzip'd
JSON in base64 (five systems on all ten conversations with their contexts are tens of megabytes as plain
JSON), decoded in the browser by ``DecompressionStream``: still one file, opened offline by a double-click.
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import jinja2
import numpy as np

from locomo_kit.paths import write_atomic
from locomo_kit.reports.figures import plotting, save_figure
from locomo_kit.reports.flips import flip_counts, flip_lines
from locomo_kit.reports.html import TEMPLATES, render_markdown, render_page
from locomo_kit.reports.numbers import num
from locomo_kit.reports.question_table import RunRef, build_question_table, correct_vector

SECTION_ID = "questions-across-runs"
_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=jinja2.select_autoescape(("j2", "html")),
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def encode_payload(data: dict[str, Any]) -> str:
    """JSON → gzip (no timestamp: the same data gives the same page) → base64 text."""
    raw = json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def decode_payload(text: str) -> dict[str, Any]:
    """The inverse of :func:`encode_payload` (what the page's script does in the browser)."""
    return json.loads(gzip.decompress(base64.b64decode(text.strip())).decode("utf-8"))


def page_payload(html: str) -> dict[str, Any]:
    """The cross-run table embedded in a page written by :func:`write_runs_page`."""
    start = html.index('id="runs-data"')
    start = html.index(">", start) + 1
    return decode_payload(html[start:html.index("</script>", start)])


def render_section(table: dict[str, Any]) -> str:
    """The explorer's HTML (filters, header, embedded data)."""
    categories = sorted({(q["category"], q["category_name"]) for q in table["questions"]})
    return _ENV.get_template("runs_explorer.html.j2").render(
        runs=table["runs"], gold_keys=table["gold_keys"], basis=table["basis"], categories=categories,
        payload=encode_payload(table))


def write_runs_page(markdown: Path, html: Path, title: str, table: dict[str, Any], subtitle: str = "") -> Path:
    """``html``: the markdown at ``markdown`` (figures inline) followed by the question explorer across runs."""
    body = render_markdown(markdown.read_text(encoding="utf-8"), markdown.parent)
    page = render_page(title, body, None, subtitle, kind="compare", section=render_section(table),
                       section_nav=(SECTION_ID, "Questions across runs"),
                       section_script=(TEMPLATES / "runs_explorer.js").read_text(encoding="utf-8"))
    return write_atomic(html, page)


OUTCOME_COLORS = ("#FFFFFF", "#55A868", "#DD8452", "#C44E52", "#B0B0B0")  # not answered, right, 3 kinds of wrong
OUTCOME_LABELS = ("not answered", "right", "wrong: the answerer missed it (evidence reached the context)",
                  "wrong: the memory lost it (no evidence reached the context)", "wrong (no evidence turns listed)")


def agreement_figure(table: dict[str, Any], path: Path, gold: str = "original", title: str = "") -> Path:
    """Which runs answer which questions: one row per run, one column per question, questions sorted by how
    many runs get them right (then by which); each cell coloured right / why wrong. Above: how many runs
    get each question right; at the right: each run's accuracy."""
    from matplotlib.colors import ListedColormap  # deferred: a heavy import
    from matplotlib.patches import Patch  # deferred: a heavy import

    plt, _ = plotting()
    runs = table["runs"]
    questions = table["questions"]
    codes = np.zeros((len(runs), len(questions)), dtype=int)
    for i in range(len(runs)):
        for k, q in enumerate(questions):
            cell = q["cells"][i]
            o = cell["outcome"].get(gold) if cell else None
            if o is None:
                continue
            codes[i, k] = 1 if o["correct"] else {"answerer": 2, "memory": 3}.get(o["failure"], 4)
    right = (codes == 1).sum(axis=0)
    pattern = [tuple(int(codes[i, k] != 1) for i in range(len(runs))) for k in range(len(questions))]
    order = sorted(range(len(questions)), key=lambda k: (-right[k], pattern[k], k))
    codes = codes[:, order] if questions else codes
    fig = plt.figure(figsize=(11, 1.9 + 0.42 * len(runs)))
    grid = fig.add_gridspec(2, 1, height_ratios=(1.0, max(1.0, 0.42 * len(runs))), hspace=0.08)
    top = fig.add_subplot(grid[0])
    ax = fig.add_subplot(grid[1], sharex=top)
    top.step(np.arange(len(order)), right[order] if questions else [], where="mid", color="#333333", lw=1)
    top.set_ylim(0, len(runs) + 0.3)
    top.set_ylabel("runs right", fontsize=8)
    top.tick_params(labelbottom=False, labelsize=7)
    top.grid(axis="y", alpha=0.3)
    ax.imshow(codes, aspect="auto", interpolation="nearest", cmap=ListedColormap(OUTCOME_COLORS), vmin=0, vmax=4,
              extent=(-0.5, len(order) - 0.5, len(runs) - 0.5, -0.5))
    ax.set_yticks(range(len(runs)), [r["name"] for r in runs], fontsize=8)
    ax.set_xlabel(f"questions ({len(questions)}), sorted by how many runs get them right", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    for i in range(len(runs)):
        vec = [v for v in correct_vector(table, i, gold) if v is not None]
        acc = 100 * sum(vec) / len(vec) if vec else float("nan")
        ax.text(1.005, (len(runs) - 1 - i + 0.5) / len(runs), f"{num(acc)}% right", transform=ax.transAxes,
                fontsize=7, va="center")
    fig.legend(handles=[Patch(facecolor=c, edgecolor="#888888", label=label)
                        for c, label in zip(OUTCOME_COLORS, OUTCOME_LABELS)],
               loc="lower center", ncol=3, fontsize=7, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title or f"Which runs answer which questions ({gold} gold key; right: {table['basis']})", fontsize=10)
    height = fig.get_figheight()
    fig.subplots_adjust(left=0.2, right=0.9, top=1 - 0.45 / height, bottom=1.05 / height)
    return save_figure(fig, path, dpi=150, tight=False)


@dataclass
class CrossRuns:
    """What a compare or leaderboard page adds: the table, the flips of its pairs, the figure, the markdown."""

    table: dict[str, Any]
    flips: list[dict[str, Any]]
    figure: Path
    lines: list[str]


def cross_runs(runs: Sequence[RunRef], folder: Path, pairs: Sequence[tuple[int, int]] | None = None,
               gold: str = "original", figure_name: str = "questions.png") -> CrossRuns:
    """The cross-run table of ``runs``, the flips of ``pairs`` (default: every pair) under ``gold`` (the
    original key when the runs were not all scored under it), the figure in ``folder`` and the markdown
    sections (flip table, figure)."""
    table = build_question_table(runs)
    gold = gold if gold in table["gold_keys"] else table["gold_keys"][0]
    flips = flip_counts(table, pairs, gold)
    png = agreement_figure(table, folder / figure_name, gold)
    lines = ["## Flips: right in one run, wrong in the other", "",
             "For each pair, the questions each run gets right that the other gets wrong (the explorer's "
             "*right in A, wrong in B* filter lists them)."]
    lines += [""] + flip_lines(flips, table)
    lines += ["## Which runs answer which questions", "",
              f"![which runs answer which questions]({png.name})", ""]
    return CrossRuns(table, flips, png, lines)
