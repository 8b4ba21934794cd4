"""Shared pieces of the `mjcenic` subcommands: argument types, progress bars."""
import argparse
import math
import sys


def positive(text):
    """argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    return v


def nonneg(text):
    """argparse type: a finite number >= 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got '{text}'")
    if not (v >= 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got '{text}'")
    return v


def floats(text):
    """argparse type: comma-separated positive numbers."""
    try:
        vals = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got '{text}'")
    if not vals or any(not (v > 0 and math.isfinite(v)) for v in vals):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got '{text}'")
    return vals


def key_value(text):
    """argparse type: KEY=VALUE with KEY one of mjcenic.option_keys()."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    k, v = text.split("=", 1)
    from . import option_keys
    if k not in option_keys():
        raise argparse.ArgumentTypeError(
            f"unknown option key '{k}' (keys: {', '.join(option_keys())})")
    return k, v


def add_stepper_args(p):
    """--mode/--accuracy/--max-step/--option. None unless given: the model's
    mjcenic plugin <config> (then the defaults) decides what is not given."""
    g = p.add_argument_group(
        "stepper options",
        "Given flags override the model's mjcenic plugin <config>, which overrides the "
        "defaults; a flag that is not given leaves the model's value in place.")
    g.add_argument("--mode", default=None, choices=["fixed", "cenic", "trapezoid"],
                   help="integration mode (model's config, else cenic)")
    g.add_argument("--accuracy", type=positive, default=None,
                   help="error-control accuracy (model's config, else 1e-3)")
    g.add_argument("--max-step", type=positive, default=None,
                   help="largest step [s] (model's config, else the default)")
    g.add_argument("--option", action="append", type=key_value, metavar="KEY=VALUE",
                   default=None, help="any stepper option (repeatable; keys: "
                                      "python -c 'import mjcenic; print(mjcenic.option_keys())')")


def stepper_options(args):
    """The options given on the command line only (see add_stepper_args)."""
    opts = {}
    for k, v in getattr(args, "option", None) or []:
        opts[k] = v
    for flag, key in (("mode", "mode"), ("accuracy", "accuracy"), ("max_step", "max_step")):
        v = getattr(args, flag, None)
        if v is not None:
            opts[key] = v
    return opts


class _NoBar:
    """What progress() returns without tqdm (the `plots` extra): no bar."""
    def __init__(self, total):
        self.total = total

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __getattr__(self, name):
        return lambda *a, **k: None


def progress(total, desc, unit="it", **kw):
    """A tqdm bar on stderr; off when stderr is not a terminal (tqdm's disable=None)
    or tqdm is not installed (pip install 'mjcenic[plots]')."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar(total)
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=None,
                leave=False, dynamic_ncols=True, **kw)
