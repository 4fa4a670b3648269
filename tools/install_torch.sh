#!/usr/bin/env bash
# Install torch into a venv, choosing the build that fits this machine, and say which.
#
# Usage: tools/install_torch.sh VENV_PYTHON [PIN]     (PIN defaults to $TORCH_PIN or torch==2.13.0)
#        tools/install_torch.sh --report VENV_PYTHON  (only print what is installed, and sizes)
#
# Why: on Linux pip's default index serves the CUDA build of torch (a 529 MiB wheel plus
# about 2 GiB of nvidia-* wheels), and `torch==X` does not name a build, so a plain
# `pip install torch==X` on a machine without a GPU downloads gigabytes it can never use.
#   - torch already in the venv and satisfying PIN: kept as it is (a build put in by hand).
#   - a working nvidia-smi: what pip resolves (the CUDA build from the default index).
#   - otherwise: PyTorch's CPU index (https://download.pytorch.org/whl/cpu) when it answers
#     within a few seconds, else what pip resolves (a local CPU wheel where pip.conf's
#     find-links has one; an offline machine must not wait on an index it cannot reach).
# Override the probe with TORCH_INDEX=cpu|default; the CPU index URL with TORCH_CPU_INDEX.
set -euo pipefail

report_only=0
if [[ "${1:-}" == "--report" ]]; then
    report_only=1
    shift
fi
py="${1:?usage: install_torch.sh VENV_PYTHON [PIN]}"
pin="${2:-${TORCH_PIN:-torch==2.13.0}}"
cpu_index="${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}"
probe_s="${TORCH_PROBE_TIMEOUT:-5}"

say() { echo "install_torch: $*"; }

# Bounded by `timeout` where coreutils has it: urllib's own timeout does not cover DNS.
run_bounded() {
    if command -v timeout >/dev/null 2>&1; then
        timeout "$((probe_s + 2))" "$@"
    else
        "$@"
    fi
}

has_cuda() {
    command -v nvidia-smi >/dev/null 2>&1 && run_bounded nvidia-smi -L >/dev/null 2>&1
}

cpu_index_reachable() {
    run_bounded "$py" -c "import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + '/torch/', timeout=float(sys.argv[2])).close()" \
        "$cpu_index" "$probe_s" >/dev/null 2>&1
}

pin_satisfied() {
    "$py" - "$pin" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
try:
    from packaging.requirements import Requirement
    from packaging.version import Version
except ImportError:  # a fresh venv: pip's own copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.version import Version

req = Requirement(sys.argv[1])
have = Version(version(req.name))
# A local build tag (+cpu, +cu128) does not change which release it is.
sys.exit(0 if req.specifier.contains(Version(have.public), prereleases=True) else 1)
EOF
}

report() {
    "$py" - <<'EOF'
import importlib.util
import os
import runpy
import sys
from pathlib import Path


def size(path: Path) -> str:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512  # as du counts
            except OSError:
                pass
    return f"{total / 2**20:,.0f} MiB"


spec = importlib.util.find_spec("torch")
if spec is None or spec.origin is None:
    print("install_torch: torch is not installed")
    sys.exit(0)
torch_dir = Path(spec.origin).parent
# torch/version.py, not `import torch`: seconds faster, and no warnings about what is missing.
version = runpy.run_path(str(torch_dir / "version.py"))
build = f"CUDA {version['cuda']}" if version["cuda"] else "CPU only"
site = torch_dir.parent
nvidia = site / "nvidia"
extra = f" + nvidia-* {size(nvidia)}" if nvidia.is_dir() else ""
print(f"install_torch: torch {version['__version__']} ({build}), {size(torch_dir)} installed{extra}")
print(f"install_torch: venv {sys.prefix}: {size(Path(sys.prefix))}")
EOF
}

if [[ $report_only == 1 ]]; then
    report
    exit 0
fi

if pin_satisfied; then
    say "keeping the torch already in the venv (satisfies $pin)"
elif [[ "${TORCH_INDEX:-}" == "default" ]] || { [[ -z "${TORCH_INDEX:-}" ]] && has_cuda; }; then
    say "nvidia-smi sees a GPU (or TORCH_INDEX=default): installing $pin as pip resolves it"
    "$py" -m pip install --quiet "$pin"
elif [[ "${TORCH_INDEX:-}" == "cpu" ]] || cpu_index_reachable; then
    say "no CUDA here: installing $pin from PyTorch's CPU index ($cpu_index)"
    "$py" -m pip install --quiet "$pin" --index-url "$cpu_index"
else
    say "no CUDA here and $cpu_index did not answer in ${probe_s} s: installing $pin as pip resolves it"
    "$py" -m pip install --quiet "$pin"
    if ! has_cuda && "$py" -c "import importlib.util as u, sys; sys.exit(not u.find_spec('nvidia'))"; then
        say "warning: this is torch's CUDA build on a machine without CUDA (several GB unused);"
        say "  for the CPU build: $py -m pip install '$pin' --index-url $cpu_index"
    fi
fi
report
