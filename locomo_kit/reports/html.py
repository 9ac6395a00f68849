"""report.html and compare.html: one self-contained page (styles, script, figures and data inline; nothing
fetched over the network), opened by a double-click.

The page body is the markdown report rendered as HTML (so both say the same thing, section by section),
in a shell (``templates/page.html.j2``) that other pages (a leaderboard) can reuse through
:func:`render_page`. A run's page adds the question explorer, whose data comes from
:func:`locomo_kit.reports.questions.explorer_data` and whose script is ``templates/explorer.js``.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import mistune
from markupsafe import Markup
from mistune.renderers.html import HTMLRenderer

from locomo_kit.paths import write_atomic
from locomo_kit.reports.questions import explorer_data

TEMPLATES = Path(__file__).with_name("templates")
_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=jinja2.select_autoescape(("j2", "html")),
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def slug(text: str) -> str:
    """An anchor for a heading: lower case words joined by hyphens."""
    return re.sub(r"[^\w]+", "-", re.sub(r"<[^>]+>", "", text).lower()).strip("-") or "section"


def data_uri(path: Path) -> str:
    kind = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}[path.suffix.lower()]
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


class _Renderer(HTMLRenderer):
    """Markdown → HTML with anchors on headings (collected for the table of contents) and images read
    from the report's folder into data URIs; raw HTML in the markdown is escaped."""

    def __init__(self, folder: Path) -> None:
        super().__init__(escape=True)
        self.folder = folder
        self.toc: list[tuple[int, str, str]] = []
        self._ids: set[str] = set()

    def heading(self, text: str, level: int, **attrs: Any) -> str:
        anchor = base = slug(text)
        n = 1
        while anchor in self._ids:
            n += 1
            anchor = f"{base}-{n}"
        self._ids.add(anchor)
        self.toc.append((level, anchor, re.sub(r"<[^>]+>", "", text)))
        return f'<h{level} id="{anchor}">{text}</h{level}>\n'

    def image(self, text: str, url: str, title: str | None = None) -> str:
        path = (self.folder / url).resolve()
        if re.match(r"[a-z]+:", url) or not path.is_file():
            # never a network reference: a missing or remote image is named, not loaded
            return f'<span class="missing-figure">[figure not found: {self.escape_attribute(url)}]</span>'
        alt = self.escape_attribute(text)
        return f'<figure><img src="{data_uri(path)}" alt="{alt}"><figcaption>{alt}</figcaption></figure>'

    def link(self, text: str, url: str, title: str | None = None) -> str:
        if re.match(r"https?:", url):
            return super().link(text, url, title)
        return text  # a relative link would point into the run folder, not the page


@dataclass
class Rendered:
    html: str
    toc: list[tuple[int, str, str]] = field(default_factory=list)


def render_markdown(text: str, folder: Path) -> Rendered:
    """A markdown report as HTML, figures inlined from ``folder``."""
    renderer = _Renderer(folder)
    html = mistune.create_markdown(renderer=renderer, plugins=["table", "strikethrough"])(text)
    return Rendered(str(html), renderer.toc)


def _asset(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def render_page(title: str, body: Rendered, explorer: dict[str, Any] | None = None, subtitle: str = "",
                kind: str = "report", section: str = "", section_nav: tuple[str, str] | None = None,
                section_script: str = "") -> str:
    """The whole page: the shell, the rendered body and, when given, the question explorer over ``explorer``
    (the dict :func:`~locomo_kit.reports.questions.explorer_data` builds). ``section``: more HTML after the
    body (e.g. the cross-run explorer), ``section_nav`` its (anchor, title) in the navigation, and
    ``section_script`` its script (run after ``ui.js``)."""
    return _ENV.get_template("page.html.j2").render(
        section=Markup(section), section_nav=section_nav, section_script=section_script, ui=_asset("ui.js"),
        title=title, subtitle=subtitle, kind=kind, body=Markup(body.html),
        toc=[t for t in body.toc if t[0] == 2], explorer=explorer, css=_asset("report.css"),
        categories=sorted({(r["category"], r["category_name"]) for r in (explorer or {}).get("rows", [])}),
        basis=next((r["scores"]["original"]["basis"] for r in (explorer or {}).get("rows", []) if r["scores"].get("original")),
                   "official F1 ≥ 0.5"),
        script=_asset("explorer.js") if explorer is not None else "")


def write_html(path: Path, text: str) -> Path:
    return write_atomic(path, text)


def write_report_html(report_md: Path, explorer: dict[str, Any], title: str, subtitle: str = "") -> Path:
    """``report.html`` beside ``report_md``: the same sections, plus the question explorer."""
    body = render_markdown(report_md.read_text(encoding="utf-8"), report_md.parent)
    return write_html(report_md.with_suffix(".html"), render_page(title, body, explorer, subtitle))


def write_compare_html(compare_md: Path, title: str) -> Path:
    """``compare.html`` beside ``compare_md``."""
    body = render_markdown(compare_md.read_text(encoding="utf-8"), compare_md.parent)
    return write_html(compare_md.with_suffix(".html"), render_page(title, body, None, kind="compare"))


def write_run_html(run: Any, conversations: list, report_md: Path) -> Path:
    """``report.html`` of a run (a :class:`~locomo_kit.runs.RunFolder`): its report plus the question explorer."""

    explorer = explorer_data(run, conversations)
    return write_report_html(report_md, explorer, title=f"LoCoMo report: {run.run_id}",
                             subtitle=f"{len(explorer['rows'])} questions · written from {run.path}")
