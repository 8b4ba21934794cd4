# The two commands of the README:
#   make demo   install what is missing, build, run mjcenic on a bundled scene
#   make test   build, then run every C++ and Python test (+ the CMake package test)
# Packaging checks run by CI (.ci/run), each a few minutes:
#   make test-wheel                 `pip wheel .` is portable (tests/packaging/test_wheel.py)
#   make test-mujoco MUJOCO=4.0.0   pip install, C++ tests and Python smoke tests against
#                                   another MuJoCo in its own venv (scripts/test_mujoco_version.sh)
PYTHON ?= python3
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps configure build demo test test-cpp test-python test-packaging test-wheel \
        test-mujoco test-ray ray-deps sanitize sanitize-build fuzz mutants clean

all: build

# Asks before installing (at a terminal); without one it stops unless
# MJCENIC_INSTALL_DEPS=1; under CI=true it installs (docs/install.md).
deps:
	@PYTHON=$(PYTHON) MJCENIC_INSTALL_DEPS=$(MJCENIC_INSTALL_DEPS) scripts/install_deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$$($(PYTHON) -c 'import sys; print(sys.executable)')

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	$(BUILD)/mjcenic-run models/clutter.xml --duration 2 --compare-mjstep --json $(BUILD)/demo.json
	@echo "JSON report: $(BUILD)/demo.json"

test-cpp: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# With pytest-xdist (the `test` extra; scripts/install_deps.sh installs it) the Python tests
# run on $(JOBS) workers, each test file on one worker (its module fixtures run once);
# PYTEST_JOBS= runs them in one process.
PYTEST_JOBS ?= $(shell $(PYTHON) -c 'import xdist' >/dev/null 2>&1 && echo --numprocesses=$(JOBS) --dist=loadfile)
test-python: build
	MJCENIC_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q $(PYTEST_JOBS) tests/python

# Versions, the MuJoCo ABI check, and `cmake --install` used by a C and C++ consumer project.
test-packaging: build
	MJCENIC_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q tests/packaging \
	  --ignore=tests/packaging/test_wheel.py

test: test-cpp test-python test-packaging

test-wheel: deps
	$(PYTHON) -m pytest -q -s tests/packaging/test_wheel.py

# The `ray` extra of pyproject.toml (pip), if Ray is not importable: CI installs it before
# `make test`, where (CI=true) a test that needs an extra fails instead of skipping.
ray-deps:
	@$(PYTHON) -c 'import ray' 2>/dev/null || $(PYTHON) -m pip install -q $$($(PYTHON) -c \
	  "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['ray']))")

# A real two-node Ray cluster on 127.0.0.1 (the second node with its own CPU and the custom
# resource node2), the distributed tests against it (tasks pinned across nodes, results equal
# to the threads backend), then `ray stop`.
RAY_PORT ?= 6389
RAY_CLI = $(PYTHON) -c "import sys; from ray.scripts.scripts import main; sys.exit(main())"
test-ray: build ray-deps
	@export RAY_AUTH_MODE=disabled; trap '$(RAY_CLI) stop --force >/dev/null 2>&1' EXIT; set -e; \
	$(RAY_CLI) start --head --node-ip-address=127.0.0.1 --port=$(RAY_PORT) --num-cpus=1 \
	  --include-dashboard=false --disable-usage-stats >/dev/null; \
	$(RAY_CLI) start --address=127.0.0.1:$(RAY_PORT) --node-ip-address=127.0.0.1 --num-cpus=1 \
	  --resources='{"node2": 1}' --disable-usage-stats >/dev/null; \
	MJCENIC_RAY_ADDRESS=127.0.0.1:$(RAY_PORT) MJCENIC_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q \
	  tests/python/test_distributed.py -k two_node_cluster

MUJOCO ?= 4.0.0
test-mujoco:
	PYTHON=$(PYTHON) JOBS=$(JOBS) scripts/test_mujoco_version.sh $(MUJOCO) $(BUILD)-mujoco-$(MUJOCO)

# ASan + UBSan build of the C++ tests (separate build tree), at -O1 with line tables only
# (-g1: reports keep file:line): half the compile time of RelWithDebInfo's -O2 -g.
SANITIZE_FLAGS = -O1 -g1 -DNDEBUG
sanitize-build: deps
	cmake -S . -B $(BUILD)-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMJCENIC_SANITIZE=ON -DMJCENIC_BUILD_PYTHON=OFF \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(SANITIZE_FLAGS)" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(SANITIZE_FLAGS)" \
	  -DPython3_EXECUTABLE=$$($(PYTHON) -c 'import sys; print(sys.executable)')
	cmake --build $(BUILD)-sanitize -j$(JOBS)

sanitize: sanitize-build
	cd $(BUILD)-sanitize && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j$(JOBS)

# Long fuzz sweep (docs/development.md): C++ cases under ASan + UBSan, then
# Python/plugin cases. FUZZ_SEED picks another sweep.
FUZZ_ITERATIONS ?= 2000
FUZZ_PY_ITERATIONS ?= 5000
FUZZ_SEED ?= 1
fuzz: sanitize-build build
	cd $(BUILD)-sanitize && ASAN_OPTIONS=detect_leaks=0 MJCENIC_FUZZ_ITERATIONS=$(FUZZ_ITERATIONS) \
	  MJCENIC_FUZZ_SEED=$(FUZZ_SEED) ./mjcenic_tests --gtest_filter='Fuzz.*'
	MJCENIC_BUILD=$(abspath $(BUILD)) MJCENIC_FUZZ_ITERATIONS=$(FUZZ_PY_ITERATIONS) \
	  MJCENIC_FUZZ_SEED=$(FUZZ_SEED) $(PYTHON) -m pytest -q tests/python/test_fuzz.py

# Mutation check of the tests (scripts/mutants.py; not part of `make test`, ~10 min
# on 2 cores): every mutation of its list applied to a scratch copy in
# $(BUILD)-mutants, rebuilt, tested; JSON in $(BUILD)-mutants/mutants.json.
mutants: deps
	$(PYTHON) scripts/mutants.py --scratch $(BUILD)-mutants --json $(BUILD)-mutants/mutants.json --jobs $(JOBS)

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(BUILD)-mujoco-* $(BUILD)/skbuild
