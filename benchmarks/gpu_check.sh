#!/usr/bin/env bash
# GPU check: on a CUDA machine, install what it lacks, run the GPU-marked tests, then
# benchmarks/gpu_check.py (every backend x precision x batch on every fixture model type
# and one realistically sized network, plus sleap-nn's own GPU paths when available),
# all inside one time budget, every output in one folder.
#
#   bash benchmarks/gpu_check.sh [OUT]                 # OUT: default ./gpu-check-out
#   SLEAP_INFER_WHEELS=/wheels bash benchmarks/gpu_check.sh "$OUT"   # offline machine
#
# Why it is built this way: the GPU machine it is for is lent for minutes, may have no
# network at all (packages arrive only as wheel files in a folder), and returns at most 8
# files no more than 2 folders down. So: one folder, few files (summary.md, results.json,
# gpu-tests.xml, machine.txt, log.txt, vs_sleap_nn.json); one deadline for the whole
# script (GPU_CHECK_TOTAL_S, default 540 s: inside 10 minutes with margin) from which the
# benchmark gets what the installs and tests left; every install best-effort (a failure
# is a note in the summary and the rows it would have enabled say "unavailable"). Without
# a GPU it runs the CPU-safe part and exits 0.
#
# Environment:
#   PYTHON               interpreter to use (default python3); it is never replaced
#   SLEAP_INFER_WHEELS   a folder of wheels: install from it only (pip --no-index)
#   GPU_CHECK_TOTAL_S    seconds for the whole script (default 540)
#   GPU_TESTS_TIMEOUT_S  limit for `pytest -m gpu` (default 150)
#   GPU_CHECK_ARGS       extra arguments for gpu_check.py (e.g. "--vs-cases single")
#   SLEAP_NN_EXE         a sleap-nn executable, for the end-to-end comparison
#   ORT_GPU_SPEC         default onnxruntime-gpu;  TRT_SPEC  default tensorrt-cuNN (torch's CUDA)
#   TORCH_INDEX_URL      where a CUDA torch comes from when torch is missing or CPU-only
#                        (default https://download.pytorch.org/whl/cuNNN from nvidia-smi)
#   GPU_CHECK_SITE       where packages go when the interpreter's site is not writable

set -uo pipefail

START=$(date +%s)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/gpu-check-out}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
cd "$ROOT" || exit 2
PY=${PYTHON:-python3}
TOTAL_S=${GPU_CHECK_TOTAL_S:-540}
TESTS_S=${GPU_TESTS_TIMEOUT_S:-150}
rm -f "$OUT"/summary.md "$OUT"/results.json "$OUT"/gpu-tests.xml "$OUT"/log.txt \
    "$OUT"/machine.txt "$OUT"/vs_sleap_nn.json

exec 3>&1 4>&2
exec > >(tee -a "$OUT/log.txt") 2>&1
TEE_PID=$!

NOTES=()
FAILED=0
note() { echo "note: $*"; NOTES+=("$*"); }
elapsed() { echo $(($(date +%s) - START)); }
have() { command -v "$1" >/dev/null 2>&1; }
limit() { # limit SECONDS CMD...: run with a hard time limit where `timeout` exists
    local s=$1
    shift
    if have timeout; then timeout -k 15 "$s" "$@"; else "$@"; fi
}

# The package from this checkout, whether or not pip installed it.
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

echo "== gpu check: $(date -u +%Y-%m-%dT%H:%M:%SZ), python $PY, output $OUT"
if ! have "$PY"; then
    echo "error: $PY not found (set PYTHON)"
    exit 2
fi

GPU=0
if have nvidia-smi && nvidia-smi -L >/dev/null 2>&1; then GPU=1; fi

# The real fixtures, for the tests and the bench alike (conftest looks in ../shared only).
if [ -z "${SLEAP_INFER_FIXTURES:-}" ]; then
    for d in "$ROOT/shared/fixtures" "$ROOT/../shared/fixtures"; do
        if [ -d "$d/models" ]; then
            SLEAP_INFER_FIXTURES=$(cd "$d" && pwd)
            export SLEAP_INFER_FIXTURES
            break
        fi
    done
fi
if [ -n "${SLEAP_INFER_FIXTURES:-}" ]; then
    echo "fixtures: $SLEAP_INFER_FIXTURES"
else
    note "fixtures not found (./shared/fixtures, ../shared/fixtures): their cells and tests skip"
fi

# What this interpreter has: shell assignments, evaluated below.
probe() {
    "$PY" - "$GPU" <<'EOF'
import importlib.util, os, re, shlex, sys, sysconfig

gpu = sys.argv[1] == "1"


def has(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


out = {"TORCH": "", "TORCH_CUDA": "", "CUDA_OK": "0", "ORT_CUDA": "0"}
try:
    import torch

    out["TORCH"] = torch.__version__
    out["TORCH_CUDA"] = torch.version.cuda or ""
    out["CUDA_OK"] = "1" if torch.cuda.is_available() else "0"
except Exception:
    pass
try:
    import onnxruntime

    out["ORT_CUDA"] = "1" if "CUDAExecutionProvider" in onnxruntime.get_available_providers() else "0"
except Exception:
    pass
out["TRT"] = "1" if has("tensorrt") else "0"
# Our dependencies (pyproject's, and the onnx extra's) that do not import here; torch is
# handled on its own, and onnxruntime too on a GPU machine (onnxruntime-gpu replaces it).
names = {"pyyaml": "yaml", "sleap-io": "sleap_io", "ndx-pose": "ndx_pose"}
try:
    import tomllib

    with open("pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    reqs = project["dependencies"] + project["optional-dependencies"]["onnx"]
except Exception:
    reqs = ["numpy>=1.26", "pyyaml>=6", "typer>=0.12", "rich>=13", "sleap-io>=0.5",
            "pynwb>=2.5", "ndx-pose>=0.2", "pandas>=2", "av>=12", "scipy>=1.11",
            "onnx>=1.16", "onnxruntime>=1.18", "onnxscript>=0.5"]
missing = []
# shapely: sleap-io imports it lazily, inside load_slp (ROIs), so a sleap-io installed
# without its dependencies imports fine and then fails every test that reads a .slp.
for req in [*reqs, "shapely>=2", "pytest>=8"]:
    name = re.split(r"[<>=!~ \[;]", req, maxsplit=1)[0]
    if name == "torch" or (gpu and name == "onnxruntime"):
        continue
    if not has(names.get(name, name.replace("-", "_"))):
        missing.append(req)
out["MISSING"] = " ".join(missing)
try:
    from importlib import metadata

    metadata.version("sleap-infer")
    out["PKG_INSTALLED"] = "1"
except Exception:
    out["PKG_INSTALLED"] = "0"
out["HAS_SETUPTOOLS"] = "1" if has("setuptools") else "0"
purelib = sysconfig.get_paths()["purelib"]
out["SITE_WRITABLE"] = "1" if os.access(purelib, os.W_OK) else "0"
managed = os.path.join(sysconfig.get_paths()["stdlib"], "EXTERNALLY-MANAGED")
out["MANAGED"] = "1" if os.path.exists(managed) and sys.prefix == sys.base_prefix else "0"
for key, value in out.items():
    print(f"{key}={shlex.quote(value)}")
EOF
}

if ! PROBE=$(probe); then
    echo "error: $PY cannot run the probe"
    exit 2
fi
eval "$PROBE"

# ---------------------------------------------------------------- installs
PIP_MODE=()
if [ "$SITE_WRITABLE" = 1 ]; then
    # Root on a system Python that marks itself externally managed: it is a lent,
    # throwaway machine, so a plain install there is what we want.
    if [ "$MANAGED" = 1 ]; then export PIP_BREAK_SYSTEM_PACKAGES=1; fi
else
    SITE=${GPU_CHECK_SITE:-${TMPDIR:-/tmp}/sleap-infer-gpu-check-site}
    mkdir -p "$SITE"
    PIP_MODE=(--target "$SITE" --upgrade)
    export PYTHONPATH="$SITE:$PYTHONPATH"
    echo "site-packages not writable: installing into $SITE (on PYTHONPATH)"
fi

SRC=""
PIP_SRC=()
need_source() { # decide once, on first need, where packages come from
    if [ -n "$SRC" ]; then return 0; fi
    if [ -n "${SLEAP_INFER_WHEELS:-}" ]; then
        if [ -d "$SLEAP_INFER_WHEELS" ]; then
            SRC="wheels in $SLEAP_INFER_WHEELS"
            PIP_SRC=(--no-index --find-links "$SLEAP_INFER_WHEELS")
        else
            SRC="none"
            note "SLEAP_INFER_WHEELS=$SLEAP_INFER_WHEELS is not a folder: nothing installed"
        fi
    elif "$PY" -c "import urllib.request as u; u.urlopen('${PIP_INDEX_URL:-https://pypi.org/simple}/pip/', timeout=5)" >/dev/null 2>&1; then
        SRC="the package index"
    else
        SRC="none"
        note "no package index reachable and SLEAP_INFER_WHEELS unset: installs skipped"
    fi
    [ "$SRC" != none ]
}
pip_install() {
    limit 420 "$PY" -m pip install --disable-pip-version-check --no-input \
        "${PIP_MODE[@]+"${PIP_MODE[@]}"}" "${PIP_SRC[@]+"${PIP_SRC[@]}"}" "$@"
}

echo "== installs ($(elapsed) s)"
# (c) torch: an existing CUDA build is kept; a missing or CPU-only one is replaced only
# where there is an NVIDIA GPU to use.
if [ "$GPU" = 1 ] && [ -z "$TORCH_CUDA" ]; then
    if need_source; then
        if [ -n "${SLEAP_INFER_WHEELS:-}" ]; then
            pip_install --upgrade torch && note "torch: CUDA build installed from $SRC"
        else
            if [ -z "${TORCH_INDEX_URL:-}" ]; then
                DRIVER_CUDA=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9]*\)\.\([0-9]*\).*/\1\2/p' | head -1)
                if [ "${DRIVER_CUDA:-0}" -ge 130 ]; then TAG=cu130
                elif [ "${DRIVER_CUDA:-0}" -ge 128 ]; then TAG=cu128
                else TAG=cu126; fi
                TORCH_INDEX_URL=https://download.pytorch.org/whl/$TAG
            fi
            pip_install --upgrade torch --index-url "$TORCH_INDEX_URL" &&
                note "torch: CUDA build installed from $TORCH_INDEX_URL"
        fi || note "torch: CUDA build could not be installed (${TORCH:-missing} kept)"
        eval "$(probe)"
    fi
fi
NO_TORCH=0
if [ -z "$TORCH" ]; then
    # Nothing here can run without torch: install nothing more, and let gpu_check.py
    # write a summary that says so.
    note "torch does not import with $PY: nothing else installed, tests not run"
    NO_TORCH=1
    FAILED=1
fi

# (d) the package's own dependencies, then the package itself.
if [ "$NO_TORCH" = 1 ]; then
    :
elif [ -n "$MISSING" ]; then
    if need_source; then
        # One at a time: a wheel missing from the folder costs that package only.
        GOT="" LACK=""
        for req in $MISSING; do
            if pip_install "$req"; then
                GOT="$GOT $req"
            elif [ -n "${SLEAP_INFER_WHEELS:-}" ] && pip_install --no-deps "$req"; then
                # A folder that fits a lent machine (64 MiB) cannot hold sleap-io's whole
                # closure (skia-python, imageio-ffmpeg: rendering and ffmpeg video, unused
                # here); what we do use is checked by importing it below.
                GOT="$GOT $req(--no-deps)"
            else
                LACK="$LACK $req"
            fi
        done
        if [ -n "$GOT" ]; then note "installed from $SRC:$GOT"; fi
        if [ -n "$LACK" ]; then note "could not install from $SRC:$LACK (see log.txt)"; fi
    else
        note "missing, not installed: $MISSING"
    fi
else
    echo "sleap_infer's dependencies already import here: nothing to install"
fi
# What the tests and the bench import at run time, lazily ones included: a gap is one
# note here rather than a column of failed tests.
if [ "$NO_TORCH" = 0 ] && ! SMOKE=$("$PY" - 2>&1 <<'EOF'
import os
from pathlib import Path

import av, ndx_pose, pynwb, shapely, sleap_io  # noqa: F401, E401

fixtures = os.environ.get("SLEAP_INFER_FIXTURES")
if fixtures and (Path(fixtures) / "videos" / "synthetic_multi.pkg.slp").is_file():
    sleap_io.load_slp(str(Path(fixtures) / "videos" / "synthetic_multi.pkg.slp"))
EOF
); then
    note "run-time imports fail (tests reading .slp or videos will fail): $(echo "$SMOKE" | tail -1)"
fi
if [ "$PKG_INSTALLED" = 1 ] || [ "$NO_TORCH" = 1 ]; then
    echo "sleap_infer: not (re)installed"
elif [ "${#PIP_MODE[@]}" = 0 ] && [ "$HAS_SETUPTOOLS" = 1 ] &&
    limit 120 "$PY" -m pip install --disable-pip-version-check --no-input --no-deps \
        --no-build-isolation -e . >/dev/null; then
    note "sleap_infer installed editable (pip install -e . --no-deps)"
else
    note "sleap_infer not pip-installed: it runs from this checkout (PYTHONPATH)"
fi

# onnxruntime-gpu and TensorRT: only where torch sees a GPU; a failure leaves their
# bench rows "unavailable", with the reason.
if [ "$NO_TORCH" = 1 ]; then
    :
elif [ "$CUDA_OK" = 1 ]; then
    if [ "$ORT_CUDA" = 1 ]; then
        echo "onnxruntime already has CUDAExecutionProvider"
    elif need_source; then
        SPEC=${ORT_GPU_SPEC:-onnxruntime-gpu}
        DL=$(mktemp -d)
        # Fetched first: the CPU build (same module name) is removed only once the GPU
        # wheel is in hand, and put back if the GPU one then fails to install.
        if limit 300 "$PY" -m pip download --disable-pip-version-check --no-deps \
            "${PIP_SRC[@]+"${PIP_SRC[@]}"}" -d "$DL" "$SPEC" >/dev/null; then
            if [ "${#PIP_MODE[@]}" = 0 ]; then
                "$PY" -m pip uninstall -y -q onnxruntime >/dev/null 2>&1
            fi
            if pip_install "$DL"/*.whl; then
                note "onnxruntime-gpu installed from $SRC ($(basename "$DL"/*.whl))"
            else
                note "onnxruntime-gpu failed to install (see log.txt)"
                [ "${#PIP_MODE[@]}" = 0 ] && pip_install onnxruntime >/dev/null 2>&1
            fi
        else
            note "onnxruntime-gpu ($SPEC) not available from $SRC"
        fi
        rm -rf "$DL"
    else
        note "onnxruntime-gpu not installed (no package source)"
    fi
    if [ "$TRT" = 1 ]; then
        echo "tensorrt already imports"
    elif need_source; then
        SPEC=${TRT_SPEC:-tensorrt-cu${TORCH_CUDA%%.*}}
        if pip_install "$SPEC"; then
            note "TensorRT installed from $SRC ($SPEC)"
        else
            note "TensorRT ($SPEC) failed to install from $SRC (see log.txt)"
        fi
    else
        note "TensorRT not installed (no package source)"
    fi
elif [ "$GPU" = 1 ]; then
    note "nvidia-smi sees a GPU but torch does not: onnxruntime-gpu and TensorRT not installed"
else
    note "no NVIDIA GPU (nvidia-smi): GPU packages not installed, CPU-safe part only"
fi

# ---------------------------------------------------------------- machine info
{
    echo "# machine ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
    uname -a
    echo
    if have nvidia-smi; then nvidia-smi 2>&1; else echo "nvidia-smi: not found"; fi
    echo
    "$PY" - <<'EOF' 2>&1
import sys, platform
print("python", sys.version.split()[0], sys.executable, platform.platform())
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn",
          torch.backends.cudnn.version(), "cuda available", torch.cuda.is_available())
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        print(f"  cuda:{i} {p.name}, {p.total_memory / 2**30:.0f} GiB, sm {p.major}.{p.minor}")
except Exception as exc:
    print("torch: not importable:", exc)
try:
    import onnxruntime as ort
    print("onnxruntime", ort.__version__, ort.get_available_providers())
except Exception as exc:
    print("onnxruntime: not importable:", exc)
try:
    import tensorrt
    print("tensorrt", tensorrt.__version__)
except Exception as exc:
    print("tensorrt: not importable:", exc)
try:
    import sleap_infer
    print("sleap_infer", sleap_infer.__version__, sleap_infer.__file__)
except Exception as exc:
    print("sleap_infer: not importable:", exc)
EOF
    echo
    echo "## packages"
    "$PY" -m pip list --disable-pip-version-check 2>/dev/null |
        grep -iE '^(torch|onnx|tensorrt|nvidia-cud|sleap|av |numpy|pytest)' || true
    echo
    echo "## notes"
    printf -- '- %s\n' "${NOTES[@]+"${NOTES[@]}"}"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt"

# ---------------------------------------------------------------- (e) GPU tests
echo "== pytest -m gpu ($(elapsed) s)"
if [ "$NO_TORCH" = 1 ]; then
    rc=0
else
    # tests/runtimes/test_gpu.py stops starting ONNX Runtime / TensorRT cases past its own budget,
    # set inside this limit so pytest ends by itself and the junit file is written.
    export SLEAP_INFER_GPU_BUDGET_S=${SLEAP_INFER_GPU_BUDGET_S:-$((TESTS_S - 40))}
    limit "$TESTS_S" "$PY" -m pytest -m gpu -q -p no:cacheprovider \
        --continue-on-collection-errors --junitxml="$OUT/gpu-tests.xml"
    rc=$?
fi
case $rc in
0) echo "GPU tests: passed (or skipped)" ;;
5) note "pytest -m gpu: no GPU-marked tests collected" ;;
124 | 137) note "pytest -m gpu stopped at its ${TESTS_S} s limit" && FAILED=1 ;;
*) note "pytest -m gpu: exit $rc" && FAILED=1 ;;
esac

# ---------------------------------------------------------------- (f) the bench
MARGIN=30
BUDGET=$((TOTAL_S - $(elapsed) - MARGIN))
if [ "$BUDGET" -lt 60 ]; then BUDGET=60; fi
echo "== gpu_check.py, budget $BUDGET s ($(elapsed) s so far)"
ARGS=(--out "$OUT" --budget-s "$BUDGET" --junit "$OUT/gpu-tests.xml" --script-start "$START")
for n in "${NOTES[@]+"${NOTES[@]}"}"; do ARGS+=(--note "$n"); done
if [ -n "${SLEAP_NN_EXE:-}" ]; then ARGS+=(--sleap-nn-exe "$SLEAP_NN_EXE"); fi
read -r -a EXTRA <<<"${GPU_CHECK_ARGS:-}"
# SIGTERM at the budget's end (+ grace) makes it write what it has; SIGKILL 15 s later.
limit $((BUDGET + 20)) "$PY" benchmarks/gpu_check.py "${ARGS[@]}" "${EXTRA[@]+"${EXTRA[@]}"}"
rc=$?
case $rc in
0) ;;
124 | 137) echo "gpu_check.py hit its hard limit: results.json holds what it measured" && FAILED=1 ;;
*) echo "gpu_check.py: exit $rc (1: a cell failed, 2: it could not run, 3: stopped)" && FAILED=1 ;;
esac

# ---------------------------------------------------------------- (g) where
echo "== done in $(elapsed) s; outputs in $OUT:"
ls -l "$OUT"
exec 1>&3 2>&4 3>&- 4>&-
wait "$TEE_PID" 2>/dev/null || sleep 1
exit "$FAILED"
