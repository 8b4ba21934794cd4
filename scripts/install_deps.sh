#!/usr/bin/env bash
# Installs what mjcenic needs on a fresh Debian machine (as root) and nothing
# that is already there: Debian packages for the C++ build, and the `default`
# MuJoCo wheel of the file MUJOCO_VERSION only when no MuJoCo in its supported
# range is installed (an installed one in range is never changed), plus numpy,
# matplotlib, tqdm (the package's `plots` extra, used by the tests), pytest and
# pytest-xdist (the `test` extra: `make test` runs the Python tests on every core),
# pybind11, scikit-build-core for scripts/tests/builds.
#
# It says what it will install before doing it (docs/install.md): under CI
# (CI=true) it installs; at a terminal it asks; without a terminal it prints the
# commands and stops unless MJCENIC_INSTALL_DEPS=1.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
range_value() { sed -n "s/^$1=//p" MUJOCO_VERSION; }
MJ_MIN=$(range_value minimum)
MJ_BELOW=$(range_value below)
MJ_DEFAULT=$(range_value default)

# libosmesa6 + xvfb: offscreen rendering and the passive-viewer test.
debs=(cmake g++ make libeigen3-dev libsuitesparse-dev libabsl-dev libgtest-dev libosmesa6 xvfb)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# cmake/g++ may come from elsewhere (pip cmake); only require the binaries.
filtered=()
for p in "${missing[@]}"; do
  case "$p" in
    cmake) command -v cmake >/dev/null || filtered+=("$p") ;;
    g++) command -v g++ >/dev/null || filtered+=("$p") ;;
    make) command -v make >/dev/null || filtered+=("$p") ;;
    *) filtered+=("$p") ;;
  esac
done
if [ ${#filtered[@]} -gt 0 ] && [ "$(id -u)" -ne 0 ]; then
  echo "mjcenic: missing Debian packages: ${filtered[*]} (run as root or: sudo apt-get install ${filtered[*]})" >&2
  exit 1
fi

have=$($PY -c "import mujoco; print(mujoco.__version__)" 2>/dev/null || true)
pips=()
if [ -z "$have" ]; then
  pips+=("mujoco==$MJ_DEFAULT")
elif ! $PY -c "import sys; v = lambda s: tuple(int(x) for x in s.split('.')[:3]); \
sys.exit(not v('$MJ_MIN') <= v('$have') < v('$MJ_BELOW'))"; then
  echo "mjcenic: mujoco $have is outside the supported range >=$MJ_MIN,<$MJ_BELOW; installing $MJ_DEFAULT"
  pips+=("mujoco==$MJ_DEFAULT")
fi
$PY -c "import numpy" 2>/dev/null || pips+=(numpy)
$PY -c "import matplotlib" 2>/dev/null || pips+=(matplotlib)
$PY -c "import tqdm" 2>/dev/null || pips+=(tqdm)
$PY -c "import pytest" 2>/dev/null || pips+=(pytest)
$PY -c "import xdist" 2>/dev/null || pips+=(pytest-xdist)
$PY -c "import pybind11" 2>/dev/null || pips+=(pybind11)
$PY -c "import scikit_build_core" 2>/dev/null || pips+=(scikit-build-core)
[ ${#filtered[@]} -gt 0 ] || [ ${#pips[@]} -gt 0 ] || exit 0

echo "mjcenic: these dependencies are missing and will be installed:"
if [ ${#filtered[@]} -gt 0 ]; then
  echo "  Debian packages: ${filtered[*]}"
  echo "    apt-get update && apt-get install -y ${filtered[*]}"
fi
if [ ${#pips[@]} -gt 0 ]; then
  echo "  Python packages: ${pips[*]}"
  echo "    $PY -m pip install ${pips[*]}"
fi
case "${CI:-}" in
  ""|0|false|False|FALSE) ci=0 ;;
  *) ci=1 ;;
esac
if [ "$ci" -eq 0 ] && [ "${MJCENIC_INSTALL_DEPS:-}" != 1 ]; then
  if [ -t 0 ]; then
    read -r -p "Install them now? [y/N] " answer || answer=
    case "$answer" in
      y|Y|yes|Yes|YES) ;;
      *) echo "mjcenic: nothing installed; run the commands above yourself, or answer y" >&2
         exit 1 ;;
    esac
  else
    echo "mjcenic: nothing installed (no terminal to ask): run the commands above yourself," \
         "or set MJCENIC_INSTALL_DEPS=1 to let make install them (make demo MJCENIC_INSTALL_DEPS=1)" >&2
    exit 1
  fi
fi

if [ ${#filtered[@]} -gt 0 ]; then
  echo "mjcenic: installing ${filtered[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${filtered[@]}" >/dev/null
fi
if [ ${#pips[@]} -gt 0 ]; then
  echo "mjcenic: pip installing ${pips[*]}"
  $PY -m pip install -q "${pips[@]}"
fi
