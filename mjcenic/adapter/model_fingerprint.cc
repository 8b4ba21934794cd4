#include "mjcenic/adapter/model_fingerprint.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include <mujoco/mjxmacro.h>

namespace mjcenic::adapter {

namespace {

// What an edit to an array means for a stepper's reuse of its last call's
// stages and of what the adapter read from the model (docs/limitations.md).
enum class Role {
  kWatched,  // read by MuJoCo's stages or the problem: an edit takes effect at once
  kFluid,    // read only while opt.density or opt.viscosity is nonzero
  kInert,    // never edited on its own: bridged into a span when that is cheaper
  kOutside,  // not read by the step, or edited for display: never in a span
};

constexpr bool EndsWith(std::string_view name, std::string_view tail) {
  return name.size() >= tail.size() && name.substr(name.size() - tail.size()) == tail;
}

// Watched, by their name's prefix: bodies (inertias, poses, gravity
// compensation), joints and dofs (limits, springs, damping, armature, friction
// loss, solver parameters), geoms (contact filters and parameters, geometry),
// sites, contact pairs and exclusions, equalities, tendons, actuators,
// wrapping, qpos0 and qpos_spring, and the numeric options MujocoAdapter
// reads. Inert: the arrays the compiler and mj_setConst derive from watched
// ones (…0 constants, subtree masses, bounding volumes, same-frame flags;
// a supported edit changes the array they derive from) and the structure
// (ids, addresses, counts, sparsity), which sizes and indexes the model and
// cannot change after compilation. Outside: user data, colours and
// materials, cameras, lights, flexes, meshes, skins, height fields, textures,
// sensors (computed after the step at every call anyway), keyframes, names.
constexpr Role RoleOf(std::string_view name) {
  for (std::string_view tail : {"_user", "_rgba", "_matid", "_group"})
    if (EndsWith(name, tail) && name != "actuator_group") return Role::kOutside;
  if (name == "geom_fluid") return Role::kFluid;
  for (std::string_view derived :
       {"body_subtreemass", "body_invweight0", "dof_invweight0", "dof_M0", "tendon_invweight0",
        "tendon_length0", "actuator_acc0", "actuator_length0", "actuator_lengthrange",
        "geom_aabb", "geom_rbound", "body_bvhadr", "body_bvhnum", "body_simple",
        "dof_simplenum", "body_sameframe", "geom_sameframe", "site_sameframe"})
    if (name == derived) return Role::kInert;
  for (std::string_view prefix : {"body_", "jnt_", "dof_", "tree_", "geom_", "site_", "pair_",
                                  "exclude_", "eq_", "tendon_", "ten_", "actuator_", "wrap_"}) {
    if (!name.starts_with(prefix)) continue;
    for (std::string_view tail : {"adr", "num", "id", "_Madr", "_colind", "_rownnz", "_plugin",
                                  "_signature", "_geom1", "_geom2", "_bodyadr", "_dofadr"})
      if (EndsWith(name, tail)) return Role::kInert;
    return Role::kWatched;
  }
  if (name == "qpos0" || name == "qpos_spring" || name == "numeric_data") return Role::kWatched;
  return Role::kOutside;
}

// A gap of inert arrays and padding up to this many bytes is compared with
// its neighbours rather than split off: a memcmp call costs about as much as
// comparing that many bytes.
constexpr std::size_t kBridge = 256;

}  // namespace

ModelFingerprint::ModelFingerprint(const mjModel* m) : m_(m) {
  // Every non-empty array, by address, with its role.
  struct Array {
    const unsigned char* data;
    std::size_t bytes;
    Role role;
  };
  std::vector<Array> arrays;
  // The sizes by name: an array's column count may be one (nuser_body, ...).
#define X(size) [[maybe_unused]] const long long size = m->size;
  MJMODEL_SIZES
#undef X
  // The role is decided at compile time (a stepper is made per rollout).
#define MJCENIC_MODEL_ARRAY(type, name, nr, nc)                                              \
  if (constexpr Role role = RoleOf(#name); static_cast<long long>(nr) * (nc) > 0)            \
    arrays.push_back({reinterpret_cast<const unsigned char*>(m->name),                       \
                      sizeof(type) * static_cast<std::size_t>(nr) * static_cast<std::size_t>(nc), \
                      role});
#define XMJV MJCENIC_MODEL_ARRAY
#define X MJCENIC_MODEL_ARRAY
  MJMODEL_POINTERS
#undef X
#undef XMJV
#undef MJCENIC_MODEL_ARRAY
  // MuJoCo lays the arrays out one after another in one buffer, each aligned:
  // watched arrays separated only by padding and inert arrays, at most kBridge
  // bytes of them, are one span (fewer memcmp calls; an inert array never
  // differs from its copy).
  std::sort(arrays.begin(), arrays.end(),
            [](const Array& x, const Array& y) { return x.data < y.data; });
  for (Role role : {Role::kWatched, Role::kFluid}) {
    std::vector<Span>& spans = role == Role::kWatched ? spans_ : fluid_spans_;
    bool open = false;
    for (const Array& a : arrays) {
      if (a.role == Role::kOutside || (a.role != role && a.role != Role::kInert)) {
        open = false;
      } else if (a.role == role) {
        if (open && static_cast<std::size_t>(a.data - (spans.back().data + spans.back().bytes)) <=
                        kBridge) {
          spans.back().bytes = static_cast<std::size_t>(a.data + a.bytes - spans.back().data);
        } else {
          spans.push_back({a.data, a.bytes, 0});
          open = true;
        }
      }
    }
  }
  std::size_t offset = 0;
  for (std::vector<Span>* spans : {&spans_, &fluid_spans_})
    for (Span& s : *spans) {
      s.offset = offset;
      offset += s.bytes;
    }
  copy_.resize(offset);
  for (const std::vector<Span>* spans : {&spans_, &fluid_spans_})
    for (const Span& s : *spans) std::memcpy(copy_.data() + s.offset, s.data, s.bytes);
}

bool ModelFingerprint::Changed() {
  // memcmp reads both copies at the library's vector width; the spans are
  // checked in full only while they are equal (the common case: no edit).
  bool changed = false;
  auto check = [&](const std::vector<Span>& spans) {
    for (const Span& s : spans) {
      if (std::memcmp(copy_.data() + s.offset, s.data, s.bytes) != 0) {
        std::memcpy(copy_.data() + s.offset, s.data, s.bytes);
        changed = true;
      }
    }
  };
  check(spans_);
  if (m_->opt.density != 0 || m_->opt.viscosity != 0) check(fluid_spans_);
  return changed;
}

}  // namespace mjcenic::adapter
