# Quick start: `make demo` and `make test` on a fresh machine with python3.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
comma := ,
# Without a GPU the install compiles the CPU kernels the demo calls into numba's cache (a failure there
# only leaves that to the first run).
# The GPU extra follows the driver: CUDA 13 drivers get cupy-cuda13x, older ones cupy-cuda12x.
CUDA_MAJOR := $(shell nvidia-smi -L >/dev/null 2>&1 && nvidia-smi | sed -n 's/.*CUDA Version: \([0-9]*\).*/\1/p' | head -1)
GPU_EXTRA  := $(if $(CUDA_MAJOR),$(if $(filter 12,$(CUDA_MAJOR)),cuda12,cuda13),)
EXTRAS     := test$(if $(GPU_EXTRA),$(comma)$(GPU_EXTRA),)

.PHONY: demo test test-gpu bench info clean

$(BIN)/distconv: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	$(if $(GPU_EXTRA),,-$(BIN)/python -m distconv.session.builds workflows/demo.yaml)
	@touch $@

demo: $(BIN)/distconv
	$(BIN)/distconv run workflows/demo.yaml --overwrite

test: $(BIN)/distconv
	$(BIN)/python -m pytest -q

test-gpu: $(BIN)/distconv
	$(BIN)/python -m pytest -q -m "gpu or multi_gpu"

bench: $(BIN)/distconv
	$(BIN)/distconv bench

info: $(BIN)/distconv
	$(BIN)/distconv info

clean:
	rm -rf $(VENV) build dist *.egg-info demo-data
