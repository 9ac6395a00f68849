"""Execute the kit's notebooks headless with papermill, each into a timestamped folder."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from locomo_kit.paths import PROJECT_ROOT, outputs_dir

NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"


def run_notebooks(names: Iterable[str], parameters: dict[str, Any] | None = None,
                  out_dir: Path | None = None) -> Path:
    """Run each notebook in order with ``parameters`` (those it declares) and return the folder."""
    import papermill as pm

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = out_dir or outputs_dir() / "notebooks" / stamp
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        src = NOTEBOOKS_DIR / name
        declared = pm.inspect_notebook(str(src))
        params = {k: v for k, v in (parameters or {}).items() if k in declared}
        pm.execute_notebook(str(src), str(out_dir / name), parameters=params,
                            kernel_name="python3", cwd=str(NOTEBOOKS_DIR), progress_bar=False)
    return out_dir
