// A cheap fingerprint of mjModel arrays, so that a stepper can tell whether
// the user edited the model between two calls (m->opt is compared by
// StateSnapshot). Meshes, height fields, textures and the like are not covered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <mujoco/mujoco.h>

namespace mjcenic::adapter {

class ModelFingerprint {
 public:
  enum class Coverage {
    // The arrays MujocoAdapter reads once when it is made (implicit damping
    // and stiffness, body masses, actuator structure and limits): small,
    // checked at every call.
    kAdapterScan,
    // The arrays of inertias, joint and dof dynamics, contact parameters and
    // geometry, actuators, tendons, equalities and pairs that MuJoCo's stages
    // read: checked before a call continues a dense-output step.
    kPhysics,
  };
  // Lists m's arrays once; Compute reads them (m must outlive this).
  ModelFingerprint(const mjModel* m, Coverage coverage);
  // A 64-bit hash of the arrays' current bytes (no allocation).
  std::uint64_t Compute() const;

 private:
  struct Span {
    const unsigned char* data;
    std::size_t bytes;
  };
  std::vector<Span> spans_;
};

}  // namespace mjcenic::adapter
