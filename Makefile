# harmony-doctor: `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= auto

.PHONY: install demo test test-python-core lint bench wheel clean

NATIVE := native/Cargo.toml native/Cargo.lock $(wildcard native/src/*.rs)

# Installing builds the Rust scan core (native/) when cargo is there; without it the package
# installs all the same and scans with the Python core (`harmony-doctor --version` says which).
# The Rust build takes about 45 s of CPU (cargo, release settings in native/Cargo.toml); the
# whole first installation, with its downloads, 2-5 minutes on 2 cores. It says how long it took.
# The package is byte-compiled once here, as pip does for a wheel and does not for an editable
# install: where PYTHONDONTWRITEBYTECODE is set (many containers), every command compiled every
# module it imported, each run (scan of a one-line log 0.20 -> 0.12 s).
$(STAMP): pyproject.toml $(NATIVE)
	@echo "== installing harmony-doctor into $(VENV)"
	@set -e; started=$$(date +%s); \
	if command -v cargo >/dev/null; then \
		echo "   building the Rust scan core too (about 45 s of CPU), quiet while it compiles"; \
	fi; \
	$(PYTHON) -m venv $(VENV); \
	$(BIN)/pip install --quiet --upgrade pip; \
	$(BIN)/pip install --quiet -e '.[dev]'; \
	$(BIN)/python -m compileall -q harmony_doctor >/dev/null; \
	echo "   installed in $$(( $$(date +%s) - started )) s ($$($(BIN)/harmony-doctor --version))"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@echo "== harmony-doctor scan samples/   (every failure in the sample logs, grouped, with rates)"
	$(BIN)/harmony-doctor scan samples/ || [ $$? -eq 1 ]
	@echo
	@echo "== harmony-doctor explain samples/seed-multiturn-completion.json   (token ids: where it broke)"
	$(BIN)/harmony-doctor explain samples/seed-multiturn-completion.json || [ $$? -eq 1 ]
	@echo
	@echo "== harmony-doctor explain samples/vllm-traceback.log   (a server log: what broke and why)"
	$(BIN)/harmony-doctor explain samples/vllm-traceback.log || [ $$? -eq 1 ]
	@echo
	@echo "== harmony-doctor decode samples/tool-call.harmony.txt"
	$(BIN)/harmony-doctor decode samples/tool-call.harmony.txt || [ $$? -eq 1 ]

test: lint
	@if command -v cargo >/dev/null; then cd native && cargo test --locked --quiet; fi
	$(BIN)/harmony-doctor --version
	$(BIN)/python -m pytest -q -n $(JOBS)

# The Python core (the reference, and the fallback where no Rust build exists) on its own:
# `make test` runs the Rust core, with Python's beside it only where a differential test
# compares them; this runs everything that reads logs (scan, logs, watch) and every golden
# with HARMONY_DOCTOR_NATIVE=0, as a user without cargo gets it (about 2.5 min on 2 cores).
# The rest of the suite tests what has no Rust path (token streams, output, the CLI's manners)
# or reads logs through the same code tested here. .ci/run calls it.
test-python-core: $(STAMP)
	HARMONY_DOCTOR_NATIVE=0 $(BIN)/python -m pytest -q -n $(JOBS) tests/scan tests/logs tests/watch tests/cli/test_golden.py

# What .pre-commit-config.yaml runs too; the Rust checks where cargo is installed.
lint: $(STAMP)
	$(BIN)/ruff check harmony_doctor tests benchmarks examples
	$(BIN)/ruff format --check harmony_doctor tests benchmarks examples
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	@if command -v cargo >/dev/null; then \
		cargo fmt --manifest-path native/Cargo.toml --check && \
		cargo clippy --manifest-path native/Cargo.toml --locked --all-targets --quiet -- -D warnings; \
	fi

# A wheel with the Rust core inside (abi3: one wheel for CPython 3.11+), built from the sdist so
# the sdist is proved whole; cargo's build of the editable install is reused (native/target).
# Users then `pip install dist/harmony_doctor-*.whl` with no Rust toolchain.
# auditwheel then tags it with the oldest manylinux its glibc symbols allow (built here: 2.34).
DIST ?= dist
wheel: $(STAMP)
	rm -rf $(DIST)
	CARGO_TARGET_DIR=$(CURDIR)/native/target $(BIN)/python -m build --no-isolation --outdir $(DIST) .
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/auditwheel repair --wheel-dir $(DIST) $(DIST)/*-linux_*.whl
	rm $(DIST)/*-linux_*.whl
	@ls $(DIST)

bench: $(STAMP)
	$(BIN)/python benchmarks/startup.py
	$(BIN)/python benchmarks/replay.py
	$(BIN)/python benchmarks/core.py
	$(BIN)/python benchmarks/scan.py
	$(BIN)/python benchmarks/grammar.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache native/target
	rm -f harmony_doctor/_native*.so
