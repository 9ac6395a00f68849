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
    cmd = [str(ROOT / ".venv" / "bin" / "jupyter"), "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--ServerApp.root_dir={folder}", f"--IdentityProvider.token={TOKEN}", "--LabApp.expose_app_in_browser=True",
           "--ServerApp.open_browser=False", "--allow-root"]
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


def check_notebook(page, base: str, name: str, shots: Path, timeout_s: float) -> dict:
    page.goto(f"{base}/lab/tree/{name}.ipynb?token={TOKEN}")
    page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook .jp-Cell')", timeout=120_000)
    page.wait_for_function("""() => { const s = document.querySelector('.jp-Notebook-ExecutionIndicator, .jp-KernelStatus');
                                 return !!document.querySelector('.jp-Notebook') }""", timeout=60_000)
    time.sleep(3)  # let the kernel start
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    start = time.monotonic()
    time.sleep(2)
    while time.monotonic() - start < timeout_s:
        busy = page.evaluate("""() => [...document.querySelectorAll('.jp-InputArea-prompt')]
                                   .some(p => p.textContent.includes('*'))""")
        if not busy:
            break
        time.sleep(1)
    seconds = round(time.monotonic() - start, 1)
    result = page.evaluate("""() => {
        const q = s => [...document.querySelectorAll(s)];
        const text = q('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]').map(e => e.innerText);
        return {
          cells: q('.jp-CodeCell').length,
          unrun: q('.jp-CodeCell .jp-InputArea-prompt').filter(p => !/\\[\\d+\\]/.test(p.textContent)).length,
          errors: q('.jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]').map(e => e.innerText.slice(0, 300)),
          stderr: text.map(t => t.slice(0, 300)),
          images: q('.jp-OutputArea-output img').length,
          progress_widgets: q('.jp-OutputArea-output .widget-hprogress, .jp-OutputArea-output progress, .jp-OutputArea-output .widget-progress').length,
        };
    }""")
    result["warnings"] = [t for t in result["stderr"] if "Warning" in t]
    result["seconds"] = seconds
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
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
                    print(f"{name}: {r['cells']} code cells, {r['unrun']} not run, {len(r['errors'])} errors, "
                          f"{len(r['warnings'])} warnings, {r['images']} images, {r['progress_widgets']} progress bars "
                          f"({r['seconds']} s)", flush=True)
                browser.close()
        finally:
            lab.terminate()
            lab.wait(timeout=30)
    (shots / "results.json").write_text(json.dumps(results, indent=2))
    bad = [n for n, r in results.items() if r["errors"] or r["warnings"] or r["unrun"]]
    print(f"screenshots and results.json in {shots}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
