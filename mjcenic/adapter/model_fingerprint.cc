#include "mjcenic/adapter/model_fingerprint.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include <mujoco/mjxmacro.h>

namespace mjcenic::adapter {

namespace {

// The arrays MuJoCo's stages and the problem read, by their name's prefix:
// bodies (inertias, poses, gravity compensation), joints and dofs (limits,
// springs, damping, armature, friction loss, solver parameters), kinematic
// trees, geoms (contact filters and parameters, geometry), sites, contact
// pairs and exclusions, equalities, tendons, actuators, wrapping, qpos0 and
// qpos_spring, and the numeric options MujocoAdapter reads. Not watched:
// user data, colours and materials (edited for display), cameras, lights,
// flexes, meshes, skins, height fields, textures, sensors (computed after the
// step at every call anyway), keyframes and names. Structural arrays (ids,
// addresses) are watched with their neighbours: fewer, longer spans.
constexpr bool Watched(std::string_view name) {
  for (std::string_view part : {"_user", "_rgba", "_matid"})
    if (name.size() >= part.size() && name.substr(name.size() - part.size()) == part)
      return false;
  for (std::string_view prefix : {"body_", "jnt_", "dof_", "tree_", "geom_", "site_", "pair_",
                                  "exclude_", "eq_", "tendon_", "ten_", "actuator_", "wrap_"})
    if (name.starts_with(prefix)) return true;
  return name == "qpos0" || name == "qpos_spring" || name == "numeric_data";
}

}  // namespace

ModelFingerprint::ModelFingerprint(const mjModel* m) {
  // Every non-empty array, watched or not, by address.
  struct Array {
    const unsigned char* data;
    std::size_t bytes;
    bool watched;
  };
  std::vector<Array> arrays;
  // The sizes by name: an array's column count may be one (nuser_body, ...).
#define X(size) [[maybe_unused]] const long long size = m->size;
  MJMODEL_SIZES
#undef X
  // Watched is decided at compile time (a stepper is made per rollout).
#define MJCENIC_MODEL_ARRAY(type, name, nr, nc)                                              \
  if (constexpr bool watched = Watched(#name); static_cast<long long>(nr) * (nc) > 0)        \
    arrays.push_back({reinterpret_cast<const unsigned char*>(m->name),                       \
                      sizeof(type) * static_cast<std::size_t>(nr) * static_cast<std::size_t>(nc), \
                      watched});
#define XMJV MJCENIC_MODEL_ARRAY
#define X MJCENIC_MODEL_ARRAY
  MJMODEL_POINTERS
#undef X
#undef XMJV
#undef MJCENIC_MODEL_ARRAY
  // MuJoCo lays the arrays out one after another in one buffer, each aligned
  // (padding between them): a run of watched arrays with no other array in
  // between is one span, padding included (~6 spans instead of ~150: the
  // cost of a check is its bytes, not its memcmp calls).
  std::sort(arrays.begin(), arrays.end(),
            [](const Array& x, const Array& y) { return x.data < y.data; });
  bool open = false;
  for (const Array& a : arrays) {
    if (!a.watched) {
      open = false;
    } else if (open) {
      spans_.back().bytes = static_cast<std::size_t>(a.data + a.bytes - spans_.back().data);
    } else {
      spans_.push_back({a.data, a.bytes, 0});
      open = true;
    }
  }
  std::size_t offset = 0;
  for (Span& s : spans_) {
    s.offset = offset;
    offset += s.bytes;
  }
  copy_.resize(offset);
  for (const Span& s : spans_) std::memcpy(copy_.data() + s.offset, s.data, s.bytes);
}

bool ModelFingerprint::Changed() {
  // memcmp reads both copies at the library's vector width; the spans are
  // checked in full only while they are equal (the common case: no edit).
  bool changed = false;
  for (const Span& s : spans_) {
    if (std::memcmp(copy_.data() + s.offset, s.data, s.bytes) != 0) {
      std::memcpy(copy_.data() + s.offset, s.data, s.bytes);
      changed = true;
    }
  }
  return changed;
}

}  // namespace mjcenic::adapter
