#include "mjcenic/integrator/model_fingerprint.h"

#include <cstring>
#include <string_view>

#include <mujoco/mjxmacro.h>

namespace mjcenic {

namespace {

bool Covered(std::string_view name) {
  for (std::string_view prefix : {"body_", "jnt_", "dof_", "geom_", "site_", "actuator_",
                                  "tendon_", "wrap_", "eq_", "pair_", "exclude_"})
    if (name.substr(0, prefix.size()) == prefix) return true;
  return name == "qpos0" || name == "qpos_spring";
}

}  // namespace

ModelFingerprint::ModelFingerprint(const mjModel* m) {
  // The sizes by name: an array's column count may be one (nuser_body, ...).
#define X(size) [[maybe_unused]] const long long size = m->size;
  MJMODEL_SIZES
#undef X
#define MJCENIC_FINGERPRINT_ARRAY(type, name, nr, nc)                                 \
  if (Covered(#name) && static_cast<long long>(nr) * (nc) > 0)                        \
    spans_.push_back({reinterpret_cast<const unsigned char*>(m->name),                \
                      sizeof(type) * static_cast<std::size_t>(nr) * static_cast<std::size_t>(nc)});
#define XMJV MJCENIC_FINGERPRINT_ARRAY
#define X MJCENIC_FINGERPRINT_ARRAY
  MJMODEL_POINTERS
#undef X
#undef XMJV
#undef MJCENIC_FINGERPRINT_ARRAY
}

std::uint64_t ModelFingerprint::Compute() const {
  // Word-wise multiply-xorshift mixing: a changed byte changes the hash
  // (up to 64-bit collisions); ~1 ns per 8 bytes.
  std::uint64_t h = 0x243f6a8885a308d3ull;
  auto mix = [&h](std::uint64_t w) {
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  };
  for (const Span& s : spans_) {
    std::size_t i = 0;
    for (; i + 8 <= s.bytes; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, s.data + i, 8);
      mix(w);
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, s.data + i, s.bytes - i);
    mix(tail ^ (static_cast<std::uint64_t>(s.bytes) << 56));
  }
  return h;
}

}  // namespace mjcenic
