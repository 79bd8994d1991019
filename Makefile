# reassignd: every target does its own set-up, idempotently, on a fresh Debian machine.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test soak system-deps venv bench chaos break-fence mutants clean codec-compiled

# Debian packages: ZooKeeper (Debian's server, run by znodes.launcher), a Java 17 runtime for it
# and for Spark, kcat (a standard Kafka client the tests point at the admin listener), and
# Chromium with its driver (the planner dashboard's browser test, tests/browser/chromium.py).
system-deps:
	@missing=""; \
	[ -x /usr/share/zookeeper/bin/zkServer.sh ] || missing="$$missing zookeeper"; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	command -v kcat >/dev/null 2>&1 || missing="$$missing kcat"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	[ -x /usr/bin/chromedriver ] || missing="$$missing chromium-driver"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# Re-installed when a top-level package appears too: the editable install maps packages by name.
$(STAMP): pyproject.toml $(wildcard */__init__.py)
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON)"; exit 1; }
	[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# The demo (demo/run.py): a local ZooKeeper, 6 simulated brokers and 2 controllers; a Spark
# rebalance onto the 2 empty brokers run with kafka-reassign through a controller failover,
# then a cancel; a summary. Everything it starts is stopped when it exits.
demo: system-deps venv
	$(PY) -m demo

# The whole suite. CI sets CI=true, which selects the Hypothesis "ci" profile (tests/conftest.py).
# Within 12 minutes on 2 cores: the stateful suite at 2,000 schedules plus the scripted ones
# that cut every crash point, 90 s of chaos with a fixed seed and the break-fence self-test
# (tests/chaos/test_break_fence.py); the long runs are `make soak` and `make chaos`.
# Two pytest-xdist workers (TEST_WORKERS), a file at a time, the longest files first
# (tests/conftest.py SLOW_FIRST): most tests wait on processes and sockets, so two keep both
# cores busy. TEST_WORKERS=0 runs everything in one process.
# The compiled codec runs are built first so that tests/protocol/test_codec_compiled.py checks
# them against the pure ones; REASSIGND_PURE_CODEC=1 keeps the rest of the suite on the pure
# codec, the default install's (make demo's).
TEST_WORKERS ?= 2
test: system-deps venv codec-compiled
	REASSIGND_PURE_CODEC=1 $(PY) -m pytest -q -p no:cacheprovider $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile) tests

# The chaos suite (tests/chaos) outside pytest, any length and seed: a 3-server ensemble,
# simulated brokers and 3 controllers under a nemesis; prints its figures last.
DURATION ?= 300
SEED ?= 1
# ISR_VIA=alter-partition: the simulated leaders send AlterPartition (Kafka 2.7+ brokers).
ISR_VIA ?= zookeeper
chaos: system-deps venv
	$(PY) -m tests.chaos --duration $(DURATION) --seed $(SEED) --isr-via $(ISR_VIA)

# The zombie check's self-test (what tests/chaos/test_break_fence.py runs in `make test`):
# controllers without the epoch fence, forced controller moves; fails unless zombie writes are found.
BREAK_FENCE_DURATION ?= 30
BREAK_FENCE_SEED ?= 20261125
break-fence: system-deps venv
	$(PY) -m tests.chaos --break-fence --duration $(BREAK_FENCE_DURATION) --seed $(BREAK_FENCE_SEED)

# The stateful suite's schedules alone (tests/controller/soak.py, docs/DESIGN.md section 7.2):
# SEED and SCHEDULES replay a run exactly - a failing run prints its line - or extend it.
# Without SEED: CI's seed under CI=true, else a random one (printed); chaos's default SEED
# above is not taken (only a SEED given to make or in the environment is).
SCHEDULES ?= 10000
soak: venv
	$(PY) -m tests.controller.soak --schedules $(SCHEDULES) $(if $(filter command line environment,$(origin SEED)),--seed $(SEED))

# Mutation score (tests/mutants, issue 25 item 5): each planted controller bug (a small patch)
# applied alone to a copy of HEAD's tracked files, its fast suite run there; prints
# mutants_killed=K/N and each kill's seconds last, fails unless every mutant dies. Not part of
# `make test`. `$(PY) -m tests.mutants --check` only checks that every patch still applies.
mutants: system-deps venv
	$(PY) -m tests.mutants

# Each benchmark records its figures in bench/results.json; the README's performance section is
# then regenerated from it (bench/results.py and bench/report.py are not benchmarks). The codec
# benchmark measures the optional compiled runs beside the pure codec, so they are built first.
bench: system-deps venv codec-compiled
	for b in codec zk_writes rpc controller planner; do echo "== bench/$$b.py"; $(PY) bench/$$b.py || exit 1; done
	$(PY) -m bench.report

# Optional: the codec's runs over arrays of flat structs compiled with Cython and the machine's
# C compiler (protocol/_flatruns.pyx; README "Performance" says what it costs). Built once and
# kept until the .pyx changes; without it the pure-Python codec runs, which is the default and
# what make test and make demo need. REASSIGND_PURE_CODEC=1 keeps the pure runs even when built.
FLATRUNS = protocol/_flatruns$(shell $(PY) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
codec-compiled: venv $(FLATRUNS)

$(FLATRUNS): protocol/_flatruns.pyx
	$(PY) -m pip install -q "cython>=3.0,<4"  # as pyproject.toml's extra "compiled"
	$(VENV)/bin/cythonize -q -i -3 protocol/_flatruns.pyx

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis protocol/_flatruns.c protocol/_flatruns.*.so
