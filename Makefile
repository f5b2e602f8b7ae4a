# Every target sets itself up: a fresh machine needs only python3 (3.11), make and apt.
SHELL := /bin/bash
UV_VERSION := 0.13.9
UV := .tools/bin/uv
VENV := .venv
VENV313 := .venv313
PY := $(VENV)/bin/python
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON ?= $(CURDIR)/$(VENV)/bin/python

.PHONY: demo test test313 test-localstack lint docs reference outdated check bench setup java rabbitmq chromium clean

demo: setup ## The end-to-end demo on the embedded AWS emulator
	$(VENV)/bin/queue-autoscale demo

test: setup rabbitmq chromium ## Lint, type-check and run every test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -n 2 --dist loadgroup

test313: $(VENV313)/.synced java rabbitmq ## The functions' unit and integration tests on Python 3.13 (the Lambda runtime)
	$(VENV313)/bin/pytest -n 2 --dist loadgroup tests/unit tests/integration

test-localstack: setup rabbitmq ## The integration suite on LocalStack (host mode, its own 3.13 venv); see CONTRIBUTING.md
	bash infra/localstack.sh run

lint: setup ## Template checks: cfn-lint, sam validate --lint, sam build, checkov
	bash infra/lint.sh

docs: setup ## The documentation site, built strictly (broken links, orphan or stale pages fail)
	$(PY) infra/docs_reference.py --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

reference: setup ## Regenerate docs/reference/ from the code (CLI, config, metrics, events)
	$(PY) infra/docs_reference.py

outdated: setup ## List the locked packages that trail their registry's latest release
	@echo "pyspark stays on 3.5, the Spark line AWS Glue 5.0 runs; numpy 1.26 on Python 3.11 with it"
	$(UV) pip list --outdated --python $(PY)

bench: setup ## Every benchmark in benchmarks/, tables written to benchmarks/results/
	$(PY) benchmarks/run_all.py

setup: $(VENV)/.synced java

$(UV):
	python3 -m venv .tools
	.tools/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.synced: pyproject.toml uv.lock $(UV)
	$(UV) sync --locked --extra dev --python python3.11
	touch $@

# A second environment from the same lock on Python 3.13 (pyenv's; infra/python313.sh finds it).
$(VENV313)/.synced: pyproject.toml uv.lock $(UV)
	UV_PROJECT_ENVIRONMENT=$(VENV313) $(UV) sync --locked --extra dev --python "$$(bash infra/python313.sh)"
	touch $@

java: ## Spark needs a JDK 17; install it from Debian when missing
	@command -v java >/dev/null 2>&1 || bash infra/install_java.sh

rabbitmq: ## The RabbitMQ source tests run a real broker: install Debian's when missing
	@bash infra/install_rabbitmq.sh

chromium: ## The report's browser test needs headless Chromium; install Debian's when missing
	@command -v chromium >/dev/null 2>&1 || bash infra/install_chromium.sh

clean:
	rm -rf $(VENV) $(VENV313) .localstack .tools .pytest_cache .mypy_cache .ruff_cache
