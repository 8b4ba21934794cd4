#!/usr/bin/env bash
# mjcenic against another MuJoCo release, in its own virtual environment
# (CI: `make test-mujoco MUJOCO=4.0.0`):
#   1. a venv with mujoco==V preinstalled: `pip install .` keeps V, and the
#      installed mjcenic imports, reports V and steps a model;
#   2. the C++ tests (ctest) and a smoke subset of the Python tests, built
#      against V in a CMake build tree.
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
"$venv/bin/python" -m pip install -q "mujoco==$V" numpy matplotlib pytest pybind11 scikit-build-core
stamp "venv ready: $venv"

"$venv/bin/python" -m pip install -q --config-settings=build-dir="$W/skbuild" .
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

cmake -S . -B "$W/build" -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$venv/bin/python" >/dev/null
cmake --build "$W/build" -j"$JOBS"
stamp "built"
(cd "$W/build" && ctest --output-on-failure -j"$JOBS")
stamp "C++ tests passed"
MJCENIC_BUILD="$W/build" "$venv/bin/python" -m pytest -q "${SMOKE[@]}"
stamp "Python smoke tests passed"
