#!/usr/bin/env python3
"""Writes the options and statistics tables from the one table in
mjcenic/integrator/options_table.h (through the built Python bindings), between
marker comments: the public options in README.md, the expert options in
docs/options.md (block `expert_options`), the statistics in docs/statistics.md;
README.md's achieved-error table (block `accuracy`) from the committed
work-precision run, docs/work_precision/work_precision.json, with the default's cost
in the control loop from the committed policy-loop run,
docs/policy_loop/policy_loop.json:

    <!-- BEGIN GENERATED options (scripts/gen_readme_tables.py) -->
    <!-- END GENERATED options -->

Run after `make build`:

    python3 scripts/gen_readme_tables.py            # rewrite README.md, docs/options.md, docs/statistics.md
    python3 scripts/gen_readme_tables.py --check    # exit 1 if either is out of date
"""
import argparse
import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "python"))

import mjcenic  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402


def _cell(text):
    return str(text).replace("\n", " ")


def options_table(expert=False):
    rows = ["| key | default | values | meaning |", "|---|---|---|---|"]
    for o in mjcenic.option_table():
        if bool(o.get("expert", False)) != expert:
            continue
        rows.append(f"| `{o['key']}` | `{o['default']}` | {_cell(o['expect'])} | {_cell(o['doc'])} |")
    return "\n".join(rows)


def stats_table():
    rows = ["| statistic | type | meaning |", "|---|---|---|"]
    for s in mjcenic.stat_table():
        kind = "integer" if s["type"] == "long" else "real"
        rows.append(f"| `{s['name']}` | {kind} | {_cell(s['doc'])} |")
    return "\n".join(rows)


def public_options():
    return (options_table() + "\n\nExpert options (solver speed knobs, variants of the error norm "
            "and the contact law, phase timers), settable by the same keys: "
            "[docs/options.md](docs/options.md).")


# The shared robots of scripts/work_precision.py, in the README's order.
ROBOTS = {"panda": "Franka Panda", "allegro": "Allegro hand", "shadow_hand": "Shadow hand",
          "robotiq_2f85": "Robotiq 2F-85", "humanoid": "humanoid (falling)",
          "barkour": "Barkour", "unitree_g1_flat": "Unitree G1", "aloha": "ALOHA"}
WORK_PRECISION = ROOT / "docs" / "work_precision" / "work_precision.json"
POLICY_LOOP = ROOT / "docs" / "policy_loop" / "policy_loop.json"


def accuracy_table():
    """Per shared robot: the default's achieved error at accuracy 1e-2 … 1e-5 next to
    mj_step's at the model's own dt, each against its own reference (the committed run), and
    the default's CPU time / mj_step's in the policy loop, ctrl written every call (held)."""
    import work_precision  # its scenes' model files (the policy loop names them alike)
    data = json.loads(WORK_PRECISION.read_text())
    loops = {r["model"]: r["loops"] for r in json.loads(POLICY_LOOP.read_text())["records"]}
    accs = (1e-2, 1e-3, 1e-4, 1e-5)
    rows = ["| robot | horizon | mjcenic at accuracy 1e-2 / 1e-3 (default) / 1e-4 / 1e-5 "
            "| `mj_step` at the model's dt | cost in a control loop |", "|---|---|---|---|---|"]

    def cost(scene):
        path = work_precision.SCENES[scene][0]
        shared = work_precision.SHARED
        lp = loops.get(str(path.relative_to(shared)) if shared in path.parents else path.name)
        if lp is None or "default" not in lp["every"]["ratio"]:
            return "—"
        return f"{lp['every']['ratio']['default']:.2f} ({lp['held']['ratio']['default']:.2f})"

    def err(run, converged):
        if run is None or "traj_error" not in run:
            return "—"
        return f"{run['traj_error']:.2g}" + ("" if converged else " (n.c.)")
    by_scene = {res["scene"]: res for res in data["results"]}
    for scene, name in ROBOTS.items():
        res = by_scene.get(scene)
        if res is None:
            continue
        ours = res["references"]["mjcenic"]["converged"]
        theirs = res["references"]["mj_step"]["converged"]
        runs = {x.get("accuracy"): x for x in res["runs"] if x["series"] == "doubling"}
        mj = next((x for x in res["runs"] if x["series"] == "mj_step"
                   and abs(x["dt"] - res["dt"]) <= 1e-12 * res["dt"]), None)
        rows.append(f"| {name} | {res['horizon']:g} s | "
                    + " / ".join(err(runs.get(a), ours) for a in accs)
                    + f" | {err(mj, theirs)} (dt = {res['dt'] * 1e3:g} ms) | {cost(scene)} |")
    return "\n".join(rows)


TABLES = {"options": public_options, "stats": stats_table, "accuracy": accuracy_table,
          "expert_options": lambda: options_table(expert=True)}


def render(readme, names=("options",)):
    """The text with the generated blocks `names` replaced."""
    for name in names:
        readme = _page.render(readme, name, "gen_readme_tables.py", TABLES[name](), blank=False)
    return readme


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="only check; exit 1 if out of date")
    p.add_argument("--readme", default=str(ROOT / "README.md"))
    p.add_argument("--stats-page", default=str(ROOT / "docs" / "statistics.md"))
    p.add_argument("--options-doc", default=str(ROOT / "docs" / "options.md"))
    a = p.parse_args(argv)
    stale = 0
    for path, names in ((pathlib.Path(a.readme), ("options", "accuracy")),
                        (pathlib.Path(a.options_doc), ("expert_options",)),
                        (pathlib.Path(a.stats_page), ("stats",))):
        text = path.read_text()
        new = render(text, names)
        if a.check:
            if new != text:
                print(f"{path} is out of date: run python3 scripts/gen_readme_tables.py",
                      file=sys.stderr)
                stale = 1
        elif new != text:
            path.write_text(new)
            print(f"updated {path}")
    return stale


if __name__ == "__main__":
    sys.exit(main())
