# Set-up, demo and tests. `make demo` and `make test` do all the set-up on a fresh Debian
# machine with Python 3.11 and gcc: a venv with the Python packages, PoCL (Debian's
# pocl-opencl-icd) for OpenCL and Graphviz (Debian's graphviz, for xrelay.render), each
# installed with apt-get when missing and we are root.
VENV := .venv
PY := $(VENV)/bin/python
export POCL_DEVICES ?= pthread pthread

.PHONY: setup opencl graphviz demo test lit pytest test-avx2-host lint bench bench-setup fuzz clean

setup: $(VENV)/.installed opencl graphviz

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@# Metadata an older set-up left in the root would shadow the installed entry points
	@# (`python -m ...` puts the root on sys.path); setuptools now writes it under .src.
	rm -rf xrelay.egg-info
	$(PY) -m pip install -q -e '.[test,serve]'
	touch $@

opencl:
	@if ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing pocl-opencl-icd (OpenCL on the CPU)"; \
	    (apt-get install -y -q pocl-opencl-icd || (apt-get update -q && apt-get install -y -q pocl-opencl-icd)) >/dev/null; \
	  else \
	    echo "warning: no OpenCL platform; install Debian's pocl-opencl-icd for the OpenCL tests" >&2; \
	  fi; \
	fi

graphviz:
	@if ! command -v dot >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing graphviz (dot, for xrelay.render and the picture tests)"; \
	    (apt-get install -y -q graphviz || (apt-get update -q && apt-get install -y -q graphviz)) >/dev/null; \
	  else \
	    echo "warning: no Graphviz 'dot'; install Debian's graphviz for xrelay.render and its tests" >&2; \
	  fi; \
	fi

demo: setup
	$(PY) examples/demo.py

test: setup lint lit pytest test-avx2-host

lit:
	$(VENV)/bin/lit -sv test/

# test/serve starts one local Ray cluster for its session: in one process, not split by xdist.
pytest:
	$(PY) -m pytest -q -n 2 test/unit test/runtime
	$(PY) -m pytest -q test/serve

# The lit tests and pytest again as on an AVX2 host whatever this one is: gcc's -march=native
# is x86-64-v3 there (test/hosts/x86-64-v3/gcc), so plain "c" targets get that host's tiles,
# vectors and plans, and (in pytest, test/unit/conftest.py) a plain "opencl" target PoCL's
# 8-float vectors there; its kernel cache is kept apart from the real one's.
AVX2_HOST := PATH="$(CURDIR)/test/hosts/x86-64-v3:$$PATH" XDG_CACHE_HOME="$(CURDIR)/build/avx2-host-cache" \
	XRELAY_TEST_OPENCL_VECTOR_WIDTH=8
test-avx2-host: setup
	$(AVX2_HOST) $(VENV)/bin/lit -q test/
	$(AVX2_HOST) $(PY) -m pytest -q -n 2 test/unit test/runtime

# pyright finds `xrelay` through the editable install (a .pth entry for .src, whose xrelay links
# to the root). `-p` names our config: pyright would prefer a pyrightconfig.json in any parent
# directory to it.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/pyright -p pyproject.toml

# The benchmarks' baselines (onnx, onnxruntime, threadpoolctl: the `bench` extra), not needed
# by the demo or the tests.
bench-setup: setup $(VENV)/.bench-installed

$(VENV)/.bench-installed: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test,serve,bench]'
	touch $@

bench: bench-setup
	@for script in bench/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

# Random programs built and run on C and OpenCL against the interpreter, and 4 N mutants through
# opt-tool; failures are shrunk into .fuzz-failures/. `make fuzz N=5000 SEED=3`.
N ?= 200
SEED ?= 0
fuzz: setup
	$(PY) bench/fuzz.py --seed $(SEED) --programs $(N) --mutants $$((4 * $(N)))

clean:
	rm -rf $(VENV) *.egg-info .src/*.egg-info build
