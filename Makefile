# Set-up and everyday commands. `make run` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8080

.PHONY: install assets codegen-tools system-deps run test test-newest lint docs bench lock clean

install: assets codegen-tools $(VENV)/.installed

## Browser assets: the npm packages pinned by web/package-lock.json, copied into
## gateway/static/graphiql/ (GraphiQL) and docs/assets/vendor/ (the manual's Mermaid) and checked
## against their manifests (gateway/static/graphiql.manifest.json, web/docs.manifest.json: sha384);
## a mismatch fails. npm runs only when the installed copy does not verify.
assets:
	@if $(PYTHON) web/copy_assets.py --check 2>/dev/null; then echo "browser assets (GraphiQL, the manual's Mermaid): verified against their manifests"; \
	else command -v npm >/dev/null || { echo "assets: npm (Node.js) is needed to fetch the browser assets" >&2; exit 1; }; \
	  (cd web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) && $(PYTHON) web/copy_assets.py; fi

## GraphQL Code Generator and TypeScript for the client-types test (tests/codegen/, pinned by its
## package-lock.json); installed again when the lock changes, left out (the test skips) without npm.
CODEGEN_TOOLS := tests/codegen/node_modules/.package-lock.json
codegen-tools: $(CODEGEN_TOOLS)
$(CODEGEN_TOOLS): tests/codegen/package-lock.json
	@if command -v npm >/dev/null; then (cd tests/codegen && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error); \
	else echo "codegen-tools: npm not found, the Code Generator test will be skipped" >&2; fi

## The gateway with its test tools, and the Spark connector (spark/, a distribution of its own).
$(VENV)/.installed: pyproject.toml spark/pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==26.3
	$(BIN)/pip install --quiet -c requirements.lock -e '.[test]' -e ./spark
	touch $@

## The main job: install, load the sample registry into the embedded store, serve.
run: install
	$(BIN)/xreg-gateway import samples/
	$(BIN)/xreg-gateway serve --host $(HOST) --port $(PORT)

## The whole test suite (installs what it needs first): lint and types, then pytest on two workers
## in random order (conventions in tests/conftest.py). PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 2
test: install system-deps lint
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadgroup

## The GraphQL and unit tests on the newest releases of strawberry-graphql and graphql-core, in a
## venv of its own (the lock first, then both upgraded): an early warning that an upgrade breaks
## something. Not part of `make test`; a failure blocks nothing (docs/getting-started.md).
NEWEST_VENV ?= .venv-newest
test-newest: assets codegen-tools
	$(PYTHON) -m venv $(NEWEST_VENV)
	$(NEWEST_VENV)/bin/pip install --quiet --upgrade pip==26.3
	$(NEWEST_VENV)/bin/pip install --quiet -c requirements.lock -e '.[test]'
	$(NEWEST_VENV)/bin/pip install --quiet --upgrade strawberry-graphql graphql-core
	@$(NEWEST_VENV)/bin/python -c 'from importlib.metadata import version as v; \
	  print("newest: strawberry-graphql", v("strawberry-graphql"), "graphql-core", v("graphql-core"))'
	$(NEWEST_VENV)/bin/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadgroup tests/graphql tests/unit

## ruff (rules and line length in pyproject.toml) and mypy on the packages.
lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

## Debian packages the tests need — Chromium (browser test), redis-server (shared cache), a Java
## runtime (Spark) — installed only when missing and only as root.
SYSTEM_PACKAGES := chromium:chromium redis-server:redis-server java:default-jre-headless

system-deps:
	@missing=""; for pair in $(SYSTEM_PACKAGES); do \
	  command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; done; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	  echo "system-deps: missing$$missing and cannot install them here (needs root and apt-get);" \
	       "the tests that need them are skipped outside CI and fail in CI"; \
	else apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; fi

## The manual (mkdocs.yml, pages in docs/) served with live reload on 127.0.0.1:8000; `make test`
## builds it with `mkdocs build --strict` (tests/docs/).
docs: install
	$(BIN)/mkdocs serve

bench: install
	$(BIN)/python bench/bench_store.py

## Re-pin every transitive dependency after changing pyproject.toml.
lock:
	rm -rf .lockenv && $(PYTHON) -m venv .lockenv
	.lockenv/bin/pip install --quiet -e '.[test]' -e ./spark
	.lockenv/bin/pip freeze --all --exclude-editable | grep -v '^xreg-gateway\|^pyspark-xregistry\|^pip==' > requirements.lock
	rm -rf .lockenv

clean:
	rm -rf $(VENV) $(NEWEST_VENV) data site .pytest_cache web/node_modules gateway/static/graphiql
