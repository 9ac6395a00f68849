"""Open the notebooks in JupyterLab in a headless Chromium, run every cell, and check what a user sees.

For each notebook: every cell ran (no error output), no warning was printed, the figures are
shown as images, and long loops drew ipywidgets progress bars. Writes a screenshot per notebook.
The notebooks are copied to a temporary folder first (JupyterLab saves what it runs), and every
output goes to a temporary LOCOMO_OUTPUTS_DIR.

    python scripts/check_notebooks_in_browser.py [--out DIR] [--chromium /usr/bin/chromium] [01_dataset ...]

Needs Playwright's Python package (``pip install playwright``; its browser download is not needed)
and a Chromium (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TOKEN = "locomo-check"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(folder: Path, outputs: Path, port: int, log: Path) -> subprocess.Popen:
    env = {**os.environ, "LOCOMO_OUTPUTS_DIR": str(outputs), "LOCOMO_EMBEDDER": os.environ.get("LOCOMO_EMBEDDER", "hashing")}
    env.pop("CI", None)  # progress bars on, as for a user
    for key in [k for k in env if k.endswith(("_API_KEY", "_AUTH_TOKEN"))]:
        env.pop(key)
    settings = folder.parent / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))  # every cell in the DOM
    cmd = [str(ROOT / ".venv" / "bin" / "jupyter"), "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--ServerApp.root_dir={folder}", f"--IdentityProvider.token={TOKEN}", "--LabApp.expose_app_in_browser=True",
           f"--LabApp.user_settings_dir={folder.parent / 'lab-settings'}", "--allow-root"]
    proc = subprocess.Popen(cmd, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", timeout=2)
            return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"JupyterLab did not start; see {log}")


KERNEL_STATUS = "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status ?? 'none'"

OUTPUTS = """() => {
    const nb = window.jupyterapp.shell.currentWidget.content;
    const cells = [];
    for (let i = 0; i < nb.model.cells.length; i++) {
        const c = nb.model.cells.get(i);
        if (c.type !== 'code') continue;
        cells.push({count: c.executionCount, outputs: c.outputs.toJSON()});
    }
    return cells;
}"""


def check_notebook(page, base: str, name: str, shots: Path, timeout_s: float) -> dict:
    page.goto(f"{base}/lab/tree/{name}.ipynb?token={TOKEN}")
    page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook .jp-Cell')", timeout=120_000)
    page.wait_for_function(f"window.jupyterapp.shell.currentWidget?.context?.path?.endsWith('{name}.ipynb')",
                           timeout=120_000)
    page.wait_for_function(f"({KERNEL_STATUS})() === 'idle'", timeout=120_000)
    start = time.monotonic()
    for _ in range(3):  # a kernel that has just connected may drop the first request
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")  # not awaited
        time.sleep(5)
        if page.evaluate(KERNEL_STATUS) != "idle" or any(c["count"] for c in page.evaluate(OUTPUTS)):
            break
    idle_since = None
    while time.monotonic() - start < timeout_s:
        status = page.evaluate(KERNEL_STATUS)
        counts = [c["count"] for c in page.evaluate(OUTPUTS)]
        if status == "idle" and all(counts):
            break
        if status == "idle" and any(o.get("output_type") == "error" for c in page.evaluate(OUTPUTS) for o in c["outputs"]):
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 5:
                break
        time.sleep(1)
    seconds = round(time.monotonic() - start, 1)
    cells = page.evaluate(OUTPUTS)
    outputs = [o for c in cells for o in c["outputs"]]
    stderr = ["".join(o.get("text", "")) for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stderr"]
    result = {
        "code_cells": len(cells),
        "not_run": sum(1 for c in cells if not c["count"]),
        "errors": [f"{o.get('ename')}: {o.get('evalue')}"[:300] for o in outputs if o.get("output_type") == "error"],
        "stderr": [t[:300] for t in stderr],
        "warnings": [t[:300] for t in stderr if "Warning" in t],
        "figures": sum(1 for o in outputs if "image/png" in o.get("data", {})),
        "progress_widgets": sum(1 for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})),
        "seconds": seconds,
    }
    # only this notebook's own outputs: the notebooks opened before stay in the DOM, hidden
    panel = page.evaluate_handle("() => window.jupyterapp.shell.currentWidget.node").as_element()
    dom = panel.evaluate("""n => ({images: n.querySelectorAll('.jp-OutputArea-output img').length,
                                   bars: n.querySelectorAll('.jp-OutputArea-output .widget-hprogress').length})""")
    result["rendered_images"], result["rendered_progress_bars"] = dom["images"], dom["bars"]
    # an inline report.html (notebook 05 shows it in an iframe): the explorer's rows as drawn there
    result["explorer_rows"] = 0
    iframe = panel.query_selector(".jp-OutputArea-output iframe")
    if iframe is not None and iframe.content_frame() is not None:
        frame = iframe.content_frame()
        try:
            frame.wait_for_selector("#explorer-rows tr.row", timeout=30_000)
        except PlaywrightTimeout:
            pass  # counted as drawn: none
        result["explorer_rows"] = frame.evaluate("() => document.querySelectorAll('#explorer-rows tr.row').length")
    page.screenshot(path=str(shots / f"{name}.png"))
    for i, el in enumerate(panel.query_selector_all(".jp-OutputArea-output img")[:3]):
        el.scroll_into_view_if_needed()
        el.screenshot(path=str(shots / f"{name}-figure{i + 1}.png"))
    bars = panel.query_selector_all(".jp-OutputArea-output .widget-hprogress")
    if bars:
        bars[0].scroll_into_view_if_needed()
        bars[0].evaluate("e => e.closest('.jp-OutputArea-output').scrollIntoView()")
        page.screenshot(path=str(shots / f"{name}-progress.png"))
    if result["explorer_rows"]:
        iframe.scroll_into_view_if_needed()
        iframe.screenshot(path=str(shots / f"{name}-explorer.png"))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=["01_dataset", "02_ingest", "03_qa", "04_score", "05_report"])
    parser.add_argument("--out", default=str(ROOT / "outputs" / "browser-check"), help="screenshots and results.json")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per notebook")
    args = parser.parse_args()
    shots = Path(args.out)
    shots.mkdir(parents=True, exist_ok=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="locomo-lab-") as tmp:
        folder, outputs = Path(tmp) / "notebooks", Path(tmp) / "outputs"
        shutil.copytree(ROOT / "notebooks", folder)
        port = free_port()
        lab = start_lab(folder, outputs, port, shots / "jupyterlab.log")
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_FLAGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                for name in args.notebooks:
                    results[name] = check_notebook(page, f"http://127.0.0.1:{port}", name, shots, args.timeout)
                    r = results[name]
                    print(f"{name}: {r['code_cells']} code cells, {r['not_run']} not run, {len(r['errors'])} errors "
                          f"{r['errors'][:1]}, {len(r['warnings'])} warnings {r['warnings'][:1]}, {r['figures']} figures "
                          f"({r['rendered_images']} rendered), {r['progress_widgets']} progress widgets "
                          f"({r['rendered_progress_bars']} rendered), {r['explorer_rows']} explorer rows ({r['seconds']} s)", flush=True)
                browser.close()
        finally:
            lab.terminate()
            lab.wait(timeout=30)
    (shots / "results.json").write_text(json.dumps(results, indent=2))
    bad = [n for n, r in results.items() if r["errors"] or r["warnings"] or r["not_run"]]
    print(f"screenshots and results.json in {shots}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
