"""Measure the question explorer across runs at full scale: its page's size and time to first render in headless
Chromium, for the runs of real systems on all 10 conversations (1,540 questions each, with their contexts).

Builds (or, with ``--keep``, reuses) the runs with ``locomo-kit leaderboard --systems S --sample all
--context-budget B`` in the bench's own outputs folder (``outputs/bench/explorer-runs``), which writes the
leaderboard page with the explorer over every run. Then it writes one more page over the first ``--runs``
runs (``locomo_kit.reports.runs_explorer``), and opens each page ``--loads`` times in Debian's Chromium
through Playwright (``/usr/bin/chromium``; nothing downloaded), offline, timing:

- time to first render: navigation start → the explorer's rows drawn (``performance.now()`` when the
  script marks the section ready: decode the base64, gunzip with ``DecompressionStream``, parse, draw);
- the script's own share of it (decode + parse + first draw), DOMContentLoaded and load;
- a "right in A, wrong in B" filter and opening a row (milliseconds from the change to the redraw);
- console or page errors (there must be none).

Prints a table and writes ``outputs/bench/explorer.json``.

    .venv/bin/python benchmarks/explorer_bench.py [--systems memworker,bm25,dense] [--context-budget 500,1000]
        [--runs 5] [--loads 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from locomo_kit.paths import outputs_dir
from locomo_kit.runs import git_commit

CHROMIUM = os.environ.get("LOCOMO_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def measure_page(browser, path: Path, loads: int) -> dict:
    """Open ``path`` ``loads`` times (a fresh page each time); the median of each timing and every error seen."""
    from locomo_kit.reports.runs_explorer import page_payload

    html = path.read_text(encoding="utf-8")
    data = page_payload(html)
    raw = len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    start = html.index('id="runs-data"')
    payload = html.index("</script>", start) - html.index(">", start) - 1
    url = path.resolve().as_uri()
    timings: dict[str, list[float]] = {k: [] for k in ("first_render_ms", "script_ms", "dom_content_loaded_ms",
                                                       "load_ms", "filter_ms", "open_row_ms")}
    errors: list[str] = []
    shown = None
    for _ in range(loads):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
        page.goto(url)
        page.wait_for_selector("#questions-across-runs[data-ready='1']", timeout=120_000)
        t = page.evaluate("""() => { const n = performance.getEntriesByType('navigation')[0];
            return {ready: window.locomoRuns.readyAt, script: window.locomoRuns.firstRenderMs,
                    dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd}; }""")
        timings["first_render_ms"].append(t["ready"])
        timings["script_ms"].append(t["script"])
        timings["dom_content_loaded_ms"].append(t["dcl"])
        timings["load_ms"].append(t["load"])
        act = page.evaluate("""() => {
            const x = window.locomoRuns, set = (id, v) => { const s = document.getElementById(id); s.value = v;
                s.dispatchEvent(new Event('change')); };
            let t0 = performance.now(); set('r-right', '0'); set('r-wrong', '1');
            const filter = performance.now() - t0, shown = document.querySelectorAll('#runs-rows tr.row').length;
            set('r-right', ''); set('r-wrong', '');
            t0 = performance.now(); document.querySelector('#runs-rows tr.row').click();
            return {filter, open: performance.now() - t0, shown}; }""")
        timings["filter_ms"].append(act["filter"])
        timings["open_row_ms"].append(act["open"])
        shown = act["shown"]
        page.close()
    return {"page": str(path), "page_bytes": path.stat().st_size, "payload_base64_bytes": payload,
            "data_json_bytes": raw, "data_gzip_ratio": round(raw / (payload * 3 / 4), 1),
            "runs": [r["name"] for r in data["runs"]], "questions": len(data["questions"]),
            "memories": len(data["memories"]), "right_in_a_wrong_in_b_rows": shown,
            **{k: round(statistics.median(v), 1) for k, v in timings.items()},
            "first_render_ms_all": [round(v, 1) for v in timings["first_render_ms"]], "errors": errors}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default="memworker,bm25,dense")
    ap.add_argument("--sample", default="all")
    ap.add_argument("--context-budget", default="500,1000")
    ap.add_argument("--runs", type=int, default=5, help="column groups of the second page (the first N runs)")
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="reuse the bench's runs (default: start empty)")
    args = ap.parse_args(argv)

    commit = (git_commit() or "")[:7] or None  # the code measured: read now, before anything runs
    real_outputs = outputs_dir()
    bench_outputs = real_outputs / "bench" / "explorer-runs"
    if bench_outputs.exists() and not args.keep:
        shutil.rmtree(bench_outputs)
    bench_outputs.mkdir(parents=True, exist_ok=True)
    os.environ["LOCOMO_OUTPUTS_DIR"] = str(bench_outputs)

    from playwright.sync_api import sync_playwright

    from locomo_kit.cli import main as cli
    from locomo_kit.reports.leaderboard_page import questions_across
    from locomo_kit.reports.runs_explorer import write_runs_page

    load_before = _load()
    t0 = time.monotonic()
    code = cli(["leaderboard", "--systems", args.systems, "--sample", args.sample, "--context-budget", args.context_budget])
    board_s = time.monotonic() - t0
    board = max((bench_outputs / "leaderboards").glob("*/leaderboard.json"), key=lambda p: p.stat().st_mtime)
    rows = json.loads(board.read_text())["rows"]
    subset = board.parent / f"explorer-{args.runs}-runs"
    subset.mkdir(exist_ok=True)
    t0 = time.monotonic()
    across = questions_across(rows[:args.runs], subset)
    md = subset / "questions.md"
    md.write_text("\n".join([f"# Questions across {min(args.runs, len(rows))} runs", ""] + across.lines), encoding="utf-8")
    page = write_runs_page(md, subset / "questions.html", md.read_text().splitlines()[0][2:], across.table)
    build_s = time.monotonic() - t0

    pages = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for path in (page, board.parent / "report.html"):
            pages.append(measure_page(browser, path, args.loads))
        browser.close()
    result = {"systems": args.systems, "sample": args.sample, "context_budget": args.context_budget,
              "leaderboard_exit": code, "leaderboard_s": round(board_s, 1), "page_build_s": round(build_s, 1),
              "pages": pages, "loads": args.loads,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": sys.version.split()[0],
                          "load_before": load_before, "load_after": _load(),
                          "chromium": subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip()},
              "git_commit": commit, "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(f"leaderboard ({args.systems}, budgets {args.context_budget}, {args.sample}): exit {code}, {board_s:.0f} s; "
          f"the {args.runs}-run page built in {build_s:.1f} s")
    print(f"{'page':<16} {'runs':>4} {'questions':>9} {'MB':>6} {'JSON MB':>8} {'first render ms':>15} {'script ms':>9} "
          f"{'filter ms':>9} {'open ms':>8} errors")
    for r, name in zip(pages, (f"{args.runs} runs", "leaderboard")):
        print(f"{name:<16} {len(r['runs']):>4} {r['questions']:>9} {r['page_bytes'] / 1e6:>6.2f} "
              f"{r['data_json_bytes'] / 1e6:>8.2f} {r['first_render_ms']:>15.0f} {r['script_ms']:>9.0f} "
              f"{r['filter_ms']:>9.0f} {r['open_row_ms']:>8.0f} {len(r['errors'])}")
    out = real_outputs / "bench" / "explorer.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"wrote {out}")
    return 0 if code == 0 and not any(r["errors"] for r in pages) else 1


if __name__ == "__main__":
    raise SystemExit(main())
