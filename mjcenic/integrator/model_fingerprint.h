// A cheap fingerprint of the mjModel arrays a convex problem reads (bodies,
// joints, dofs, geoms, sites, actuators, tendons, equalities, contact pairs
// and exclusions), so that a stepper can tell whether the user edited the
// model between two calls (m->opt is compared by StateSnapshot). Meshes,
// height fields, textures and the like are not covered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <mujoco/mujoco.h>

namespace mjcenic {

class ModelFingerprint {
 public:
  // Lists m's arrays once; Compute reads them (m must outlive this).
  explicit ModelFingerprint(const mjModel* m);
  // A 64-bit hash of the arrays' current bytes (no allocation).
  std::uint64_t Compute() const;

 private:
  struct Span {
    const unsigned char* data;
    std::size_t bytes;
  };
  std::vector<Span> spans_;
};

}  // namespace mjcenic
