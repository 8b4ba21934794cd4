// The mjModel arrays a stepper's problem reads, watched for edits between two
// calls (m->opt is compared by StateSnapshot): a copy of their bytes, compared
// with memcmp at every call (docs/limitations.md). Which arrays:
// model_fingerprint.cc, RoleOf (not meshes, flexes, textures, colours,
// names, user data, nor what the compiler derives; the fluid coefficients
// only while the fluid model is on).
#pragma once

#include <cstddef>
#include <vector>

#include <mujoco/mujoco.h>

namespace mjcenic::adapter {

class ModelFingerprint {
 public:
  // Lists m's watched arrays and copies them (m must outlive this).
  explicit ModelFingerprint(const mjModel* m);
  // Whether a watched array differs from the copy; if so the copy is taken
  // again (the edit is reported once). No allocation.
  bool Changed();
  // The bytes watched (tests, docs).
  std::size_t bytes() const { return copy_.size(); }

 private:
  struct Span {
    const unsigned char* data;
    std::size_t bytes;
    std::size_t offset;  // into copy_
  };
  const mjModel* m_;
  std::vector<Span> spans_;
  std::vector<Span> fluid_spans_;  // compared while opt.density or opt.viscosity is nonzero
  std::vector<unsigned char> copy_;
};

}  // namespace mjcenic::adapter
