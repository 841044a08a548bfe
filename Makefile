# Set-up, demo and tests. `make demo` and `make test` do all the set-up on a fresh Debian
# machine with Python 3.11 and gcc: a venv with the Python packages, and PoCL (Debian's
# pocl-opencl-icd, installed with apt-get when missing and we are root) for OpenCL.
VENV := .venv
PY := $(VENV)/bin/python
export POCL_DEVICES ?= pthread pthread

.PHONY: setup opencl demo test lit pytest lint bench clean

setup: $(VENV)/.installed opencl

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
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

demo: setup
	$(PY) examples/demo.py

test: setup lit pytest

lit:
	$(VENV)/bin/lit -sv test/

pytest:
	$(PY) -m pytest -q -n 2 test/unit test/runtime

# pyright cannot follow the editable install's import hook, so it finds `xrelay` through a link
# to the repository root ([tool.pyright] extraPaths in pyproject.toml). `-p` names our config:
# pyright would prefer a pyrightconfig.json in any parent directory to it.
lint: setup $(VENV)/pyright/xrelay
	$(VENV)/bin/pyright -p pyproject.toml

$(VENV)/pyright/xrelay:
	mkdir -p $(VENV)/pyright
	ln -sfn $(CURDIR) $@

bench: setup
	@for script in bench/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) *.egg-info
