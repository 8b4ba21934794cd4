// No heap allocation in the per-step hot path after warm-up. Counts every
// operator new of this test binary and, by interposing the C allocator
// (malloc, calloc, realloc, aligned_alloc, posix_memalign, memalign — Eigen,
// CHOLMOD and MuJoCo allocate through these), every C allocation of the
// process between two points. Under AddressSanitizer, which owns the C
// allocator, only operator new is counted.
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace {
std::atomic<long> g_allocations{0};
bool g_trap = false;
void Count() {
  ++g_allocations;
  if (g_trap) __builtin_trap();
}
}  // namespace

// MJCENIC_ASAN: the sanitizer build undefines __SANITIZE_ADDRESS__ for mujoco.h
// (CMakeLists.txt) and says so with this macro.
#if defined(__SANITIZE_ADDRESS__) || defined(MJCENIC_ASAN)
#define MJCENIC_COUNT_MALLOC 0
#else
#define MJCENIC_COUNT_MALLOC 1
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void* malloc(std::size_t n) {
  Count();
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t size) {
  Count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t n) {
  Count();
  return __libc_realloc(p, n);
}
void* memalign(std::size_t alignment, std::size_t n) {
  Count();
  return __libc_memalign(alignment, n);
}
void* aligned_alloc(std::size_t alignment, std::size_t n) {
  Count();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t n) {
  Count();
  void* p = __libc_memalign(alignment, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
}
#endif

void* operator new(std::size_t n) {
  // With the C allocator interposed, malloc below counts this allocation.
  if (!MJCENIC_COUNT_MALLOC) Count();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
// Not inlined: GCC would otherwise see free() on the pointer of a new
// expression (its built-in operator new) and warn of a mismatch
// (-Wmismatched-new-delete) that these replacements, malloc and free on both
// sides, do not have.
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

long AllocationsWhileStepping(mjcenic::Mode mode, const char* file, double warmup, double run,
                              mjcenic::ErrorNormKind norm = mjcenic::ErrorNormKind::kWeighted) {
  char err[1000];
  mjModel* m = mj_loadXML(file, nullptr, err, sizeof(err));
  EXPECT_NE(m, nullptr) << err;
  mjData* d = mj_makeData(m);
  mj_resetDataKeyframe(m, d, 0);
  mjcenic::StepperOptions o;
  o.mode = mode;
  o.accuracy = 1e-2;
  o.error_norm = norm;
  auto s = mjcenic::Stepper::Create(m, o).value();
  while (d->time < warmup) EXPECT_TRUE(s->Step(d).ok());
  const long before = g_allocations.load();
  if (std::getenv("MJCENIC_ALLOC_TRAP")) g_trap = true;  // debugging: stop at the allocation
  while (d->time < warmup + run) EXPECT_TRUE(s->Step(d).ok());
  const long count = g_allocations.load() - before;
  g_trap = false;
  s.reset();
  mj_deleteData(d);
  mj_deleteModel(m);
  return count;
}

// Buffers only grow, so allocation stops once the contact set has reached its
// largest size and the sparse pattern its largest coupling set: the clutter
// has settled after 2.5 s.
// The counter sees C allocations (the check is live, not vacuous).
TEST(Allocation, CounterSeesMallocAndNew) {
  const long before = g_allocations.load();
  void* volatile p = std::malloc(24);
  std::free(p);
  int* volatile q = new int(3);
  delete q;
  EXPECT_EQ(g_allocations.load() - before, MJCENIC_COUNT_MALLOC ? 2 : 1);
}

TEST(Allocation, NoneAfterWarmupFixed) {
  EXPECT_EQ(AllocationsWhileStepping(mjcenic::Mode::kFixed, MJCENIC_MODELS_DIR "/clutter.xml",
                                     2.5, 0.5), 0);
}


// With error control the pile settles later: a spinning object (obj6) meets
// a new neighbour between t = 2.75 and 3 s (a new coupling, analysed once), so the
// window starts at 4 s.
TEST(Allocation, NoneAfterWarmupCenic) {
  EXPECT_EQ(AllocationsWhileStepping(mjcenic::Mode::kCenic, MJCENIC_MODELS_DIR "/clutter.xml",
                                     4.0, 0.5), 0);
}

// The block Cholesky over the trees (§8.7) with frozen islands and contacts
// assembled straight into the blocks: the mesh pile (free convex hulls in a
// bin, multi-point contacts, one or two large islands) once it has settled.
TEST(Allocation, NoneAfterWarmupBlockPile) {
  EXPECT_EQ(AllocationsWhileStepping(mjcenic::Mode::kFixed, MJCENIC_MODELS_DIR "/mesh_pile.xml",
                                     1.0, 0.3), 0);
}

TEST(Allocation, NoneAfterWarmupRobotArm) {
  MJCENIC_SHARED_MODEL_OR_SKIP(panda, "menagerie/franka_emika_panda/scene.xml");
  EXPECT_EQ(AllocationsWhileStepping(mjcenic::Mode::kCenic, panda.c_str(), 0.5, 0.5),
            0);
}

// The propagated norms (cenic-math §11.11): the Hessian diagonal, and the
// extra factorization and solves of propagated_modes, reuse their buffers.
TEST(Allocation, NoneAfterWarmupPropagatedNorms) {
  MJCENIC_SHARED_MODEL_OR_SKIP(panda, "menagerie/franka_emika_panda/scene.xml");
  for (auto norm : {mjcenic::ErrorNormKind::kPropagated, mjcenic::ErrorNormKind::kPropagatedModes}) {
    EXPECT_EQ(AllocationsWhileStepping(
                  mjcenic::Mode::kCenic,
                  panda.c_str(), 0.5, 0.5,
                  norm),
              0)
        << mjcenic::ToString(norm);
    EXPECT_EQ(AllocationsWhileStepping(mjcenic::Mode::kCenic, MJCENIC_MODELS_DIR "/clutter.xml",
                                       4.0, 0.5, norm),
              0)
        << mjcenic::ToString(norm);
  }
}

// The PCG path (cenic-math §8.4: block-sparse H, Gauss–Seidel sweeps, the
// forcing): a 6×6×6 pile of balls on slide joints, one island of 648 dofs,
// PCG forced, fixed mode.
// condim 1: frictionless contacts, whose coupling blocks PCG keeps rank-one
// (cenic-math §8.4).
TEST(Allocation, NoneAfterWarmupPcgPile) {
  for (int condim : {3, 1}) {
    std::string xml = R"(<mujoco><option timestep="0.005"/><worldbody>
      <geom type="plane" size="1 1 0.1"/>)";
    char buf[400];
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j)
        for (int k = 0; k < 6; ++k) {
          std::snprintf(buf, sizeof(buf),
                        R"(<body pos="%g %g %g"><joint type="slide" axis="1 0 0"/>
                        <joint type="slide" axis="0 1 0"/><joint type="slide" axis="0 0 1"/>
                        <geom type="sphere" size="0.02" mass="0.05" condim="%d"/></body>)",
                        0.039 * i + 0.001 * k, 0.039 * j, 0.019 + 0.041 * k, condim);
          xml += buf;
        }
    xml += "</worldbody></mujoco>";
    char err[1000];
    mjSpec* spec = mj_parseXMLString(xml.c_str(), nullptr, err, sizeof(err));
    ASSERT_NE(spec, nullptr) << err;
    mjModel* m = mj_compile(spec, nullptr);
    ASSERT_NE(m, nullptr);
    mjData* d = mj_makeData(m);
    mj_forward(m, d);
    mjcenic::StepperOptions o;
    o.mode = mjcenic::Mode::kFixed;
    o.solver.linear_solver = mjcenic::LinearSolverKind::kPcg;
    auto s = mjcenic::Stepper::Create(m, o).value();
    // The window 0.5–0.6 s is run twice from the same state: the first
    // run is the warm-up (the frictionless pile still spreads, so its
    // contact count can reach a new maximum there), the second is counted.
    mjData* d0 = mj_makeData(m);
    while (d->time < 0.5) EXPECT_TRUE(s->Step(d).ok());
    mj_copyData(d0, m, d);
    while (d->time < 0.6) EXPECT_TRUE(s->Step(d).ok());
    mj_copyData(d, m, d0);
    const long before = g_allocations.load();
    while (d->time < 0.6) EXPECT_TRUE(s->Step(d).ok());
    EXPECT_EQ(g_allocations.load() - before, 0) << "condim " << condim;
    EXPECT_GT(s->stats().newton_iterations, 0);
    s.reset();
    mj_deleteData(d0);
    mj_deleteData(d);
    mj_deleteModel(m);
    mj_deleteSpec(spec);
  }
}

// Skipped estimates with a body in flight (cenic-math §11.13): the Shadow
// hand's cube falls for 0.11 s, calls of opt.timestep cut every step to land
// (no dense output, as with a new ctrl every call); the row marks, the split
// estimate and the half-step positions reuse their buffers.
TEST(Allocation, NoneAfterWarmupBodyInFlight) {
  MJCENIC_SHARED_MODEL_OR_SKIP(hand, "menagerie/shadow_hand/scene_right.xml");
  char err[1000];
  mjModel* m = mj_loadXML(hand.c_str(), nullptr, err, sizeof(err));
  ASSERT_NE(m, nullptr) << err;
  mjData* d = mj_makeData(m);
  mj_forward(m, d);
  mjcenic::StepperOptions o;
  o.dense_output = false;
  auto s = mjcenic::Stepper::Create(m, o).value();
  while (d->time < 0.02) EXPECT_TRUE(s->Step(d).ok());
  const long before = g_allocations.load();
  const long solves = s->stats().solves, steps = s->stats().steps;
  while (d->time < 0.1) EXPECT_TRUE(s->Step(d).ok());
  EXPECT_EQ(g_allocations.load() - before, 0);
  // The window skipped estimates (fewer than three solves per step).
  EXPECT_LT(s->stats().solves - solves, 2 * (s->stats().steps - steps));
  s.reset();
  mj_deleteData(d);
  mj_deleteModel(m);
}

// The lowrank linear solver (wide tendon rows through a hub body, body–body
// contacts coming and going; cenic-math.md §8.6). The balls keep swinging
// into new contact sets (the largest grows until ~7 s), and a new largest
// set grows the buffers: the window is one without a new largest set.
TEST(Allocation, NoneAfterWarmupLowRankTendons) {
  MJCENIC_SHARED_MODEL_OR_SKIP(tendon, "mujoco/replicate/tendon.xml");
  EXPECT_EQ(AllocationsWhileStepping(mjcenic::Mode::kFixed, tendon.c_str(), 5.0, 0.5),
            0);
}

}  // namespace
