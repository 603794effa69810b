# Set-up and everyday commands. `make run` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8080

.PHONY: install run test bench lock clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==26.3
	$(BIN)/pip install --quiet -c requirements.lock -e '.[test]'
	touch $@

## The main job: install, load the sample registry into the embedded store, serve.
run: install
	$(BIN)/xreg-gateway import samples/
	$(BIN)/xreg-gateway serve --host $(HOST) --port $(PORT)

## The whole test suite (installs what it needs first).
test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: install
	$(BIN)/python bench/bench_store.py

## Re-pin every transitive dependency after changing pyproject.toml.
lock:
	rm -rf .lockenv && $(PYTHON) -m venv .lockenv
	.lockenv/bin/pip install --quiet -e '.[test]'
	.lockenv/bin/pip freeze --exclude-editable | grep -v '^xreg-gateway' > requirements.lock
	rm -rf .lockenv

clean:
	rm -rf $(VENV) data .pytest_cache
