# Two entry points for a fresh machine: `make demo` and `make test`.
# Each creates .venv from scratch if needed. torch is installed first, by
# tools/install_torch.sh: without CUDA it takes PyTorch's CPU index when that answers
# (else what pip resolves, e.g. a local CPU wheel), so the package's `torch>=...`
# requirement is already satisfied and pip never pulls a multi-GB CUDA build. It
# prints which torch it installed and the sizes.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_PIN ?= torch==2.13.0
STAMP := $(VENV)/.installed-stamp

.PHONY: install test lint format demo bench bench-vs-sleap-nn bench-agreement bench-rss bench-tracking gpu-check clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	bash tools/install_torch.sh $(PY) "$(TORCH_PIN)"
	$(PY) -m pip install --quiet -e ".[onnx,openvino,dev]"
	bash tools/install_torch.sh --report $(PY)
	touch $(STAMP)

install: $(STAMP)

test: lint
	$(PY) -m pytest

# ruff (style, complexity <= 15), import-linter (floors run one way) and mypy (the modules
# named in [tool.mypy] files), see pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

demo: $(STAMP)
	$(PY) examples/synthetic/demo.py

# Speed, measured (not tested): see docs/benchmarks.md. The last three need ../shared/fixtures;
# bench-vs-sleap-nn and bench-agreement install sleap-nn into .bench-venv/ on first use (several GB).
bench: $(STAMP)
	$(VENV)/bin/infer bench examples/models/synthetic_single_instance --device cpu --size 128x128

bench-vs-sleap-nn: $(STAMP)
	$(PY) benchmarks/vs_sleap_nn.py

# Keypoint agreement over whole videos, every model type: ours (torch, onnx) vs sleap-nn.
# ARGS="--frames 0-99" for a quick run; sleap-nn's outputs are cached in .bench-venv/agreement.
bench-agreement: $(STAMP)
	$(PY) benchmarks/agreement.py --json .bench-venv/agreement/agreement.json $(ARGS)

bench-rss: $(STAMP)
	$(PY) benchmarks/rss_vs_length.py

# Tracking: same tracks as sleap-nn's classic tracker, and MOTA / IDF1 against ground truth.
bench-tracking: $(STAMP)
	$(PY) -m pip install --quiet "motmetrics>=1.4"
	$(PY) benchmarks/tracking_parity.py
	$(PY) benchmarks/tracking_accuracy.py

# GPU path on real hardware (one H200: inside 10 minutes). Not through .venv: its torch is
# the pinned CPU build, wrong on a GPU machine. Runs with $(PYTHON) (keeps its CUDA torch;
# installs one only where torch is missing or CPU-only and nvidia-smi exists), installs
# what is missing (onnxruntime-gpu, TensorRT, our deps) best-effort, offline from
# SLEAP_INFER_WHEELS=DIR if set, then pytest -m gpu and benchmarks/gpu_check.py (every
# backend x fp32/fp16 x batch 1/8/32, fixture models + a 1024x1024 UNet, and sleap-nn's
# GPU paths if SLEAP_NN_EXE is set), all into $(GPU_CHECK_OUT)/. Without a GPU: CPU-safe part.
GPU_CHECK_OUT ?= gpu-check-out
gpu-check:
	PYTHON="$(PYTHON)" bash benchmarks/gpu_check.sh $(GPU_CHECK_OUT)

clean:
	rm -rf $(VENV) demo_out .pytest_cache .ruff_cache
