"""Issue 13: grasps that hold. Static friction without creep at every step
size, with stiction anchors on (`stiction_anchors=true`, README "How mjcenic
holds grasps"; on by default). Each scene loads its object far inside the friction cone, where
Coulomb's law admits no motion and the regularized friction of the paper
alone creeps at ε ρ/sqrt(1 − ρ²) (asserted too, so the scenes do load the
contacts). Runs and measurement: scripts/bench_creep.py."""
import pathlib
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import bench_creep  # noqa: E402

ACCURACIES = [1e-2, 1e-3, 1e-4]
FIXED = [1e-3, 2e-3, 5e-3, 1e-2, 2e-2]
# Acceptance bounds [µm/s]
BOUND = {"pinch": 0.1, "incline": 0.1, "panda": 1.0}


@pytest.mark.parametrize("scene", ["pinch", "incline", "panda"])
def test_anchors_hold_at_every_accuracy_and_fixed_step(scene):
    on = {"stiction_anchors": "true"}
    runs = {f"loop {a:g}": bench_creep.creep(scene, "loop", on, accuracy=a) for a in ACCURACIES}
    runs.update({f"chunks {a:g}": bench_creep.creep(scene, "chunks", on, accuracy=a)
                 for a in ACCURACIES})
    runs.update({f"fixed {h * 1e3:g} ms": bench_creep.creep(scene, "fixed", on, h=h) for h in FIXED})
    for name, r in runs.items():
        print(f"{scene} {name}: creep {r['creep_um_s']:.3g} µm/s, {r['steps']} steps")
    for name, r in runs.items():
        assert r["ok"], f"{scene} {name} failed"
        assert r["creep_um_s"] < BOUND[scene], f"{scene} {name}: {r['creep_um_s']:.3g} µm/s"


@pytest.mark.parametrize("scene,least", [("pinch", 3.0), ("incline", 30.0), ("panda", 10.0)])
def test_regularized_friction_alone_creeps(scene, least):
    """Without anchors the same scenes creep at the regularized rate (incline:
    v_s ρ/sqrt(1 − ρ²) = 37.7 µm/s at ρ = tan 10°/0.5), i.e. the scenes load
    their contacts and the anchors are what holds them."""
    r = bench_creep.creep(scene, "loop", {"stiction_anchors": "false"}, accuracy=1e-3)
    print(f"{scene} without anchors: {r['creep_um_s']:.3g} µm/s")
    assert r["creep_um_s"] > least
