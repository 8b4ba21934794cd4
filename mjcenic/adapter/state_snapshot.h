// A copy of the part of an mjData that MuJoCo's position/velocity stages (or
// a convex problem built from them) depend on, so that the stepper can tell
// whether d still holds the state its stages or models were computed at.
// Equality is bitwise (the same test as comparing the bytes), word by word
// and stopping at the first difference, so the usual "the state moved" case
// costs a few loads.
#pragma once

#include <vector>

#include <mujoco/mujoco.h>

namespace mjcenic {

class StateSnapshot {
 public:
  // with_inputs: also ctrl, qfrc_applied and xfrc_applied.
  explicit StateSnapshot(bool with_inputs) : with_inputs_(with_inputs) {}

  // Records d's qpos, qvel, act, mocap poses, eq_active, m's options, which
  // mjData it is and (with_inputs) the inputs.
  // options = false keeps the recorded m->opt: for a caller that knows it
  // equals the one recorded (cenic-math §8.9).
  void Capture(const mjModel* m, const mjData* d, bool options = true);
  // True if Capture was called and d (same mjData) holds the same values.
  bool Matches(const mjModel* m, const mjData* d) const;
  void Invalidate() { valid_ = false; }

 private:
  bool with_inputs_;
  bool valid_ = false;
  const mjData* data_ = nullptr;
  mjOption opt_{};
  std::vector<double> values_;     // the double arrays, concatenated
  std::vector<mjtByte> eq_active_;
};

}  // namespace mjcenic
