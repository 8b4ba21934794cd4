"""The argument types of the `mjcenic` command (mjcenic._cliutil): each bound
of `positive`, `nonneg` and `floats` at its edge, and a 0 where a positive
number is needed refused by `mjcenic run` before any work."""
import argparse
import subprocess
import sys

import pytest

from mjcenic import _cliutil
from conftest import ROOT, python_env


@pytest.mark.parametrize("text", ["0", "0.0", "-0", "-1e-300", "nan", "inf", "x", ""])
def test_positive_refuses_zero_negative_and_nonfinite(text):
    with pytest.raises(argparse.ArgumentTypeError, match="positive"):
        _cliutil.positive(text)


def test_positive_accepts_the_smallest_positive_number():
    assert _cliutil.positive("5e-324") == 5e-324
    assert _cliutil.positive("2.5") == 2.5


@pytest.mark.parametrize("text", ["-1e-300", "nan", "inf", "x"])
def test_nonneg_refuses_negative_and_nonfinite(text):
    with pytest.raises(argparse.ArgumentTypeError, match=">= 0"):
        _cliutil.nonneg(text)


def test_nonneg_accepts_zero():
    assert _cliutil.nonneg("0") == 0.0


@pytest.mark.parametrize("text", ["0", "1,0", "1,-2", "1,nan", "", ",", "1,x"])
def test_floats_refuses_nonpositive_entries(text):
    with pytest.raises(argparse.ArgumentTypeError):
        _cliutil.floats(text)


def test_floats_reads_a_list():
    assert _cliutil.floats("1e-3, 1e-4,") == [1e-3, 1e-4]


@pytest.mark.parametrize("flag", ["--duration", "--accuracy", "--max-step"])
def test_run_refuses_zero_for_a_positive_flag(flag):
    p = subprocess.run([sys.executable, "-m", "mjcenic", "run", str(ROOT / "models/sphere_plane.xml"),
                        flag, "0"], capture_output=True, text=True, timeout=300, env=python_env())
    assert p.returncode == 2, p.stderr
    assert flag in p.stderr and "expected a positive number, got '0'" in p.stderr
    assert p.stdout == ""  # nothing ran
