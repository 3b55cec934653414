#!/usr/bin/env bash
# Three modules were called config.py. This renames two of them to say their job:
#   distconv/core/config.py   -> distconv/core/keys.py        (every distconv.* dask config key, declared once)
#   distconv/engine/config.py -> distconv/engine/settings.py  (the engine's settings read from those keys; zarr's)
# distconv/session/config.py (the cluster config) keeps its name.
#
# It moves the files (git mv) and rewrites every import, attribute use, module string and path
# mention in distconv/, tests/, benchmarks/ and the top-level maps (*.md, pyproject.toml).
# Rerun it after merging the other branches: it is idempotent and finds the files itself.
# Usage: bash rename.sh   (from anywhere inside the checkout; PYTHON=... to pick the interpreter)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
if [ -e distconv/core/config.py ]; then git mv distconv/core/config.py distconv/core/keys.py; fi
if [ -e distconv/engine/config.py ]; then git mv distconv/engine/config.py distconv/engine/settings.py; fi
"${PYTHON:-python3}" - <<'EOF'
import pathlib
import re

ROOT = pathlib.Path(".")
FILES = [p for d in ("distconv", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py")]
TEXT = [*ROOT.glob("*.md"), ROOT / "pyproject.toml", *(ROOT / "benchmarks").glob("*.md")]
BARE = r"(?<![\w.])config\."   # config.<name>, not dask.config / zarr.config / self.config


def import_list(line: str, new: str) -> str:
    """`from X import a, config, b` with config renamed (an `as` alias of it dropped when it is `new`)."""
    head, names = line.split(" import ", 1)
    out = []
    for n in (s.strip() for s in names.split(",")):
        if n in ("config", f"config as {new}"):
            n = new
        elif n.startswith("config as "):
            n = f"{new} as {n.split()[-1]}"
        out.append(n)
    return f"{head} import {', '.join(sorted(out, key=str.lower))}"


def rewrite(path: pathlib.Path, s: str) -> str:
    in_engine = path.parts[:2] == ("distconv", "engine")
    core_bare = engine_bare = False
    lines = s.split("\n")
    for i, line in enumerate(lines):
        code = line.strip()
        # the core module: `from ..core import config [as keys]`, `from distconv.core import config`
        if re.match(r"from (\.+|distconv\.)core import .*\bconfig\b", code):
            core_bare |= bool(re.search(r"\bconfig\b(?! as)", code.split(" import ", 1)[1]))
            lines[i] = import_list(line, "keys")
        # the engine module: `from . import config` inside engine/, `from distconv.engine import config`
        elif (in_engine and re.match(r"from \. import .*\bconfig\b", code)) or \
                re.match(r"from (\.\.|\.\.\.|distconv\.)engine import .*\bconfig\b", code):
            engine_bare |= bool(re.search(r"\bconfig\b(?! as)", code.split(" import ", 1)[1]))
            lines[i] = import_list(line, "settings")
    s = "\n".join(lines)
    if in_engine:  # mentions of the engine's constants in prose, before the general rewrite
        s = s.replace("config.DEVICE_BLOCKS of them", "settings.device_blocks() of them")
        s = s.replace("keeps config.IO_SLOTS blocks", "keeps settings.io_slots() blocks")
    if core_bare and engine_bare:
        raise SystemExit(f"{path}: imports both config modules as `config`; rename by hand")
    if core_bare:
        s = re.sub(BARE, "keys.", s)
    if engine_bare:
        s = re.sub(BARE, "settings.", s)
    # `from ..core.config import X`, `from .config import X` inside engine/, module strings
    s = re.sub(r"\bcore\.config\b", "core.keys", s)
    s = re.sub(r"\bengine\.config\b", "engine.settings", s)
    if in_engine:
        s = re.sub(r"from \.config import", "from .settings import", s)
        s = s.replace('"config": (', '"settings": (')  # engine/__init__'s lazy names
        s = s.replace("- slots.py, config.py:", "- slots.py, settings.py:")
    return s


def paths(s: str) -> str:
    s = s.replace("core/config.py", "core/keys.py").replace("engine/config.py", "engine/settings.py")
    # ARCHITECTURE.md's rows name the modules without their folder
    s = s.replace("`config.py` (every `distconv.*` dask config key", "`keys.py` (every `distconv.*` dask config key")
    s = s.replace("`config.py` (the engine's readers", "`settings.py` (the engine's readers")
    return s


for p in FILES:
    old = p.read_text()
    new = paths(rewrite(p, old))
    if new != old:
        p.write_text(new)
        print("rewrote", p)
for p in TEXT:
    if p.exists():
        old = p.read_text()
        new = paths(old)
        if new != old:
            p.write_text(new)
            print("rewrote", p)
EOF
echo "left to read by eye (should list only session/config.py's mentions):"
grep -rn "core\.config\|engine\.config\|core/config\.py\|engine/config\.py" distconv tests benchmarks ./*.md pyproject.toml || true
