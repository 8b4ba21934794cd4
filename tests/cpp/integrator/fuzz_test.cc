// Seeded randomized robustness suite: random MJCF from a small
// grammar (supported and unsupported features), random options (valid and
// invalid), random hostile states and random API call sequences. Invariant
// for every call: a clean success with a finite state at the target time, or
// an error whose message starts with "mjcenic" (and, for bad inputs, the
// state bit-for-bit preserved); never a crash, a hang (every case is bounded
// by max_steps_per_call and a bounded number of calls) or a sanitizer report.
//
// Besides, each class of hostile input is generated on its own (the Fuzz
// tests below RandomModels...): extreme values of every integer option,
// tolerances at both ends of their ranges and in combination (success must
// move the physics: a frozen pendulum is a silent wrong result), and model
// edits between calls in every mode (they must take effect in the next call).
//
// MJCENIC_FUZZ_ITERATIONS (default 40) and MJCENIC_FUZZ_SEED (default 1)
// select the cases (the class tests run MJCENIC_FUZZ_ITERATIONS / 4 each);
// `make fuzz` runs a long sweep under ASan + UBSan.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/options_table.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelPtr;
using Rng = std::mt19937_64;

long EnvLong(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

double Uniform(Rng& r, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(r);
}
int Int(Rng& r, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(r); }
bool Chance(Rng& r, double p) { return Uniform(r, 0, 1) < p; }
template <typename T>
const T& Pick(Rng& r, const std::vector<T>& v) {
  return v[Int(r, 0, static_cast<int>(v.size()) - 1)];
}
std::string Num(double x) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.6g", x);
  return b;
}

// One random MJCF scene from the grammar: up to 4 bodies (chains or free),
// joints (free, ball, hinge, slide), geoms (sphere, box, capsule, cylinder,
// ellipsoid) over a plane, optional limits, equalities, actuators, a fixed
// tendon, and now and then settings mjcenic warns about or refuses.
std::string RandomMjcf(Rng& r) {
  std::string option = "<option timestep=\"" + Num(Pick(r, std::vector<double>{0.002, 0.005, 0.01, 0.001})) + "\"";
  if (Chance(r, 0.2)) option += Pick(r, std::vector<std::string>{" integrator=\"RK4\"", " integrator=\"implicitfast\"", " integrator=\"implicit\""});
  if (Chance(r, 0.2)) option += Pick(r, std::vector<std::string>{" solver=\"CG\"", " solver=\"PGS\""});
  if (Chance(r, 0.1)) option += " noslip_iterations=\"3\"";
  if (Chance(r, 0.2)) option += " cone=\"elliptic\"";
  option += "/>";
  std::string body, actuators, equality, tendon;
  std::vector<std::string> joints, hinge_like;
  const int nbody = Int(r, 1, 4);
  std::string close;
  for (int b = 0; b < nbody; ++b) {
    const bool chain = b > 0 && Chance(r, 0.5);
    if (!chain) {
      body += close;
      close.clear();
    }
    body += "<body name=\"b" + std::to_string(b) + "\" pos=\"" + Num(Uniform(r, -0.5, 0.5)) + " " +
            Num(Uniform(r, -0.5, 0.5)) + " " + Num(Uniform(r, 0.05, 1.0)) + "\"";
    if (Chance(r, 0.1)) body += " gravcomp=\"1\"";
    body += ">";
    close = "</body>" + close;
    const std::string jn = "j" + std::to_string(b);
    const int jt = chain ? Int(r, 1, 3) : Int(r, 0, 4);  // free only at the root
    if (jt == 0) {
      body += "<freejoint name=\"" + jn + "\"/>";
    } else if (jt < 4) {
      const char* type = jt == 1 ? "hinge" : jt == 2 ? "slide" : "ball";
      body += std::string("<joint name=\"") + jn + "\" type=\"" + type + "\" axis=\"" +
              Num(Uniform(r, -1, 1)) + " " + Num(Uniform(r, -1, 1)) + " 1\"";
      if (Chance(r, 0.4))
        body += jt == 3 ? " range=\"0 " + Num(Uniform(r, 0.1, 1.5)) + "\""
                        : " range=\"" + Num(-Uniform(r, 0.01, 1)) + " " + Num(Uniform(r, 0.01, 1)) + "\"";
      if (Chance(r, 0.3)) body += " damping=\"" + Num(Uniform(r, 0, 2)) + "\"";
      if (Chance(r, 0.2)) body += " frictionloss=\"" + Num(Uniform(r, 0, 1)) + "\"";
      if (Chance(r, 0.2)) body += " stiffness=\"" + Num(Uniform(r, 0, 50)) + "\"";
      body += "/>";
      joints.push_back(jn);
      if (jt != 3) hinge_like.push_back(jn);
    }
    const std::vector<std::string> shapes{"sphere", "box", "capsule", "cylinder", "ellipsoid"};
    const std::string& shape = Pick(r, shapes);
    body += "<geom type=\"" + shape + "\" size=\"" + Num(Uniform(r, 0.02, 0.2)) + " " +
            Num(Uniform(r, 0.02, 0.2)) + " " + Num(Uniform(r, 0.02, 0.2)) + "\" mass=\"" +
            Num(Pick(r, std::vector<double>{1, 0.01, 100, Uniform(r, 0.1, 5)})) + "\"";
    if (Chance(r, 0.3)) body += " condim=\"" + std::to_string(Pick(r, std::vector<int>{1, 3, 4, 6})) + "\"";
    if (Chance(r, 0.2)) body += " friction=\"" + Num(Uniform(r, 0, 2)) + "\"";
    if (Chance(r, 0.2)) body += " solref=\"" + Num(Uniform(r, 0.002, 0.05)) + " 1\"";
    body += "/>";
  }
  body += close;
  for (size_t i = 0; i < hinge_like.size(); ++i) {
    if (!Chance(r, 0.5)) continue;
    const std::string& j = hinge_like[i];
    switch (Int(r, 0, 3)) {
      case 0: actuators += "<motor joint=\"" + j + "\" gear=\"" + Num(Uniform(r, 0.5, 5)) + "\"" + (Chance(r, 0.5) ? " ctrlrange=\"-1 1\"" : "") + "/>"; break;
      case 1: actuators += "<position joint=\"" + j + "\" kp=\"" + Num(Uniform(r, 1, 200)) + "\"/>"; break;
      case 2: actuators += "<velocity joint=\"" + j + "\" kv=\"" + Num(Uniform(r, 0.1, 20)) + "\"/>"; break;
      default:
        actuators += "<general joint=\"" + j + "\" dyntype=\"" + Pick(r, std::vector<std::string>{"filter", "filterexact", "integrator"}) +
                     "\" dynprm=\"0.05\" gainprm=\"" + Num(Uniform(r, 1, 10)) + "\"" +
                     (Chance(r, 0.3) ? " actlimited=\"true\" actrange=\"-1 1\"" : "") +
                     (Chance(r, 0.1) ? " nsample=\"3\" interp=\"zoh\" delay=\"0.01\"" : "") + "/>";
    }
  }
  if (hinge_like.size() >= 2 && Chance(r, 0.4))
    equality += "<joint joint1=\"" + hinge_like[0] + "\" joint2=\"" + hinge_like[1] + "\"/>";
  if (nbody >= 2 && Chance(r, 0.3))
    equality += std::string("<") + (Chance(r, 0.5) ? "connect" : "weld") +
                " body1=\"b0\" body2=\"b1\" anchor=\"0 0 0\"/>";
  if (!hinge_like.empty() && Chance(r, 0.3)) {
    tendon = "<tendon><fixed name=\"t\"";
    if (Chance(r, 0.5)) tendon += " limited=\"true\" range=\"-0.5 0.5\"";
    tendon += ">";
    for (const std::string& j : hinge_like) tendon += "<joint joint=\"" + j + "\" coef=\"" + Num(Uniform(r, -1, 1)) + "\"/>";
    tendon += "</fixed></tendon>";
  }
  return "<mujoco>" + option + "<worldbody><geom type=\"plane\" size=\"2 2 .1\"/>" + body +
         "</worldbody>" + (actuators.empty() ? "" : "<actuator>" + actuators + "</actuator>") +
         (equality.empty() ? "" : "<equality>" + equality + "</equality>") + tendon +
         "</mujoco>";
}

// Random option set: mostly valid, sometimes invalid (SetOption refuses it).
StepperOptions RandomOptions(Rng& r, std::string* log) {
  StepperOptions o;
  struct KV { const char* key; std::vector<std::string> values; };
  const std::vector<KV> table{
      {"mode", {"fixed", "cenic", "trapezoid", "rk4"}},
      {"accuracy", {"1e-1", "1e-2", "1e-3", "1e-5", "1e-12", "0", "-1", "nan"}},
      {"max_step", {"0", "0.001", "0.01", "0.1", "1e-9", "-1"}},
      {"min_step", {"0", "1e-6", "0.5", "2"}},
      {"initial_step", {"0", "1e-4", "10"}},
      {"length_scale", {"0", "0.1", "1e-300", "1e-6"}},
      {"error_norm", {"weighted", "drake", "full_state", "bogus"}},
      {"extrapolate", {"true", "false"}},
      {"global_accuracy", {"true", "false"}},
      {"error_control", {"true", "false"}},
      {"max_iterations", {"1", "2", "100", "0", "1.5"}},
      {"linear_solver", {"auto", "dense", "sparse", "islands", "pcg", "lowrank", "block", "tree"}},
      {"controller_mode", {"zero_order_hold", "explicit", "implicit"}},
      {"speculative_margin", {"0", "0.01"}},
      {"contact_stiffness", {"0", "1e4", "1e12"}},
      {"stiction_tolerance", {"1e-4", "1e-9", "0"}},
  };
  const int n = Int(r, 0, 5);
  for (int i = 0; i < n; ++i) {
    const KV& kv = Pick(r, table);
    const std::string& v = Pick(r, kv.values);
    const absl::Status s = SetOption(&o, kv.key, v);
    *log += std::string(" ") + kv.key + "=" + v + (s.ok() ? "" : "(refused)");
    if (!s.ok()) {
      EXPECT_NE(std::string(s.message()).find(kv.key), std::string::npos) << s.message();
    }
  }
  o.max_steps_per_call = Int(r, 1, 2000);  // bounds the case
  return o;
}

double Hostile(Rng& r) {
  const std::vector<double> v{std::numeric_limits<double>::quiet_NaN(),
                              std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity(), 1e300, -1e300, 1e20,
                              1e8, -1e8, 0};
  return Pick(r, v);
}

struct Snapshot {
  std::vector<double> qpos, qvel, act;
  double time;
  Snapshot(const mjModel* m, const mjData* d)
      : qpos(d->qpos, d->qpos + m->nq), qvel(d->qvel, d->qvel + m->nv),
        act(d->act, d->act + m->na), time(d->time) {}
  bool Same(const mjData* d) const {
    auto same = [](const std::vector<double>& a, const double* b) {
      return a.empty() || std::memcmp(a.data(), b, sizeof(double) * a.size()) == 0;
    };
    return same(qpos, d->qpos) && same(qvel, d->qvel) && same(act, d->act) &&
           std::memcmp(&time, &d->time, sizeof(double)) == 0;
  }
};

bool Finite(const mjModel* m, const mjData* d) {
  for (int i = 0; i < m->nq; ++i) if (!std::isfinite(d->qpos[i])) return false;
  for (int i = 0; i < m->nv; ++i) if (!std::isfinite(d->qvel[i])) return false;
  for (int i = 0; i < m->na; ++i) if (!std::isfinite(d->act[i])) return false;
  return std::isfinite(d->time);
}

bool InputsFinite(const mjModel* m, const mjData* d) {
  for (int i = 0; i < m->nu; ++i) if (!std::isfinite(d->ctrl[i])) return false;
  for (int i = 0; i < m->nv; ++i) if (!std::isfinite(d->qfrc_applied[i])) return false;
  return Finite(m, d);
}

// One checked call: the invariant of the file header.
void Check(const mjModel* m, mjData* d, const absl::Status& s, const Snapshot& before,
           double target, const std::string& what) {
  if (s.ok()) {
    EXPECT_TRUE(Finite(m, d)) << what << ": success with a non-finite state";
    if (std::isfinite(target)) {
      EXPECT_EQ(d->time, target) << what;
    }
    return;
  }
  const std::string msg(s.message());
  EXPECT_EQ(msg.rfind("mjcenic", 0), 0u) << what << ": unclear error: " << msg;
  EXPECT_GT(msg.size(), 20u) << what << ": " << msg;
  // Errors on the inputs (checked before any work) leave the state as it was.
  if (s.code() == absl::StatusCode::kInvalidArgument &&
      msg.find("was not advanced") != std::string::npos) {
    EXPECT_TRUE(before.Same(d)) << what << ": state changed by a refused call: " << msg;
  }
}

void RunCase(uint64_t seed) {
  Rng r(seed);
  const std::string xml = RandomMjcf(r);
  std::string log = "seed " + std::to_string(seed) + ":";
  SCOPED_TRACE(log + " " + xml);
  std::string err;
  ModelPtr m = test_util::ModelFromXml(xml, &err);
  if (!m) return;  // the grammar can produce MJCF MuJoCo refuses; not our concern
  if (Chance(r, 0.1)) m->opt.timestep = Pick(r, std::vector<double>{0, -0.01, 1e10, 1e-12, std::nan("")});
  const StepperOptions o = RandomOptions(r, &log);
  SCOPED_TRACE(log);
  auto created = Stepper::Create(m.get(), o);
  if (!created.ok()) {
    EXPECT_EQ(std::string(created.status().message()).rfind("mjcenic", 0), 0u)
        << created.status().message();
    return;
  }
  std::unique_ptr<Stepper> s = std::move(created).value();
  DataPtr d(mj_makeData(m.get()));
  DataPtr other(mj_makeData(m.get()));
  if (m->nkey > 0 && Chance(r, 0.5)) mj_resetDataKeyframe(m.get(), d.get(), 0);
  const int ncalls = Int(r, 1, 8);
  for (int c = 0; c < ncalls; ++c) {
    // Hostile edits now and then.
    if (Chance(r, 0.25)) {
      switch (Int(r, 0, 5)) {
        case 0: if (m->nq) d->qpos[Int(r, 0, m->nq - 1)] = Hostile(r); break;
        case 1: if (m->nv) d->qvel[Int(r, 0, m->nv - 1)] = Hostile(r); break;
        case 2: if (m->nu) d->ctrl[Int(r, 0, m->nu - 1)] = Hostile(r); break;
        case 3: if (m->nv) d->qfrc_applied[Int(r, 0, m->nv - 1)] = Hostile(r); break;
        case 4: d->time = Pick(r, std::vector<double>{1e17, -5, 1e6, std::nan(""), 0}); break;
        default: if (m->na) d->act[Int(r, 0, m->na - 1)] = Hostile(r); break;
      }
    }
    if (m->nu && Chance(r, 0.5))
      for (int i = 0; i < m->nu; ++i) d->ctrl[i] = Uniform(r, -2, 2);
    const Snapshot before(m.get(), d.get());
    const bool inputs_ok = InputsFinite(m.get(), d.get());
    switch (Int(r, 0, 7)) {
      case 0: case 1: {
        const double target = d->time + m->opt.timestep;
        Check(m.get(), d.get(), s->Step(d.get()), before, target, "Step");
        break;
      }
      case 2: {
        const double t = d->time + Pick(r, std::vector<double>{0, 0.01, 0.05, -0.01, 1e-17});
        const absl::Status st = s->AdvanceTo(d.get(), t);
        Check(m.get(), d.get(), st, before, t, "AdvanceTo");
        break;
      }
      case 3: Check(m.get(), d.get(), s->StepOnce(d.get()), before, NAN, "StepOnce"); break;
      case 4: mj_resetData(m.get(), d.get()); break;
      case 5: {  // the same stepper on a copy of the data
        mj_copyData(other.get(), m.get(), d.get());
        const Snapshot b2(m.get(), other.get());
        Check(m.get(), other.get(), s->Step(other.get()), b2, NAN, "Step(copy)");
        break;
      }
      case 6: {  // a fresh stepper replaces the old one
        auto again = Stepper::Create(m.get(), o);
        ASSERT_TRUE(again.ok()) << again.status().message();
        s = std::move(again).value();
        break;
      }
      default: {  // two steppers on two datas in two threads
        auto s2 = Stepper::Create(m.get(), o);
        ASSERT_TRUE(s2.ok());
        mj_copyData(other.get(), m.get(), d.get());
        const Snapshot b2(m.get(), other.get());
        absl::Status st1, st2;
        std::thread t1([&] { st1 = s->Step(d.get()); });
        std::thread t2([&] { st2 = (*s2)->Step(other.get()); });
        t1.join();
        t2.join();
        Check(m.get(), d.get(), st1, before, NAN, "thread 1");
        Check(m.get(), other.get(), st2, b2, NAN, "thread 2");
      }
    }
    if (!inputs_ok) mj_resetData(m.get(), d.get());  // a refused state stays refused
  }
}

TEST(Fuzz, RandomModelsOptionsStatesAndCallSequences) {
  const long n = EnvLong("MJCENIC_FUZZ_ITERATIONS", 40);
  const long seed = EnvLong("MJCENIC_FUZZ_SEED", 1);
  for (long i = 0; i < n; ++i) {
    RunCase(static_cast<uint64_t>(seed) * 1000003ull + static_cast<uint64_t>(i));
    if (HasFailure()) {
      ADD_FAILURE() << "first failing case: MJCENIC_FUZZ_SEED=" << seed << ", iteration " << i;
      return;
    }
  }
}

// ---------------------------------------------------------------- classes

// What a class case ended in (reported per class; crash and hang end the run).
struct Outcomes {
  int clear_error = 0, ran_correctly = 0, silent_wrong = 0;
};

void Report(const char* name, const Outcomes& o) {
  std::printf("[ fuzz class ] %-28s clear error %3d, ran correctly %3d, silent wrong %d\n", name,
              o.clear_error, o.ran_correctly, o.silent_wrong);
}

bool StartsWithMjcenic(const absl::Status& s) {
  return std::string(s.message()).rfind("mjcenic", 0) == 0;
}

// A pendulum released at 1 rad: period ≈ 1.7 s, through the bottom by 0.5 s.
ModelPtr FuzzPendulum() {
  std::string err;
  ModelPtr m = test_util::ModelFromXml(
      "<mujoco><worldbody><body><joint name='j' type='hinge' axis='0 1 0'/>"
      "<geom type='capsule' fromto='0 0 0 0 0 -1' size='.05' mass='1'/></body></worldbody>"
      "<actuator><motor joint='j'/></actuator></mujoco>",
      &err);
  EXPECT_NE(m, nullptr) << err;
  return m;
}

long ClassIterations() { return std::max(1L, EnvLong("MJCENIC_FUZZ_ITERATIONS", 40) / 4); }

// Every option key with extreme integer-like texts: accepted within the
// documented range, else refused naming the key; an accepted set steps.
TEST(Fuzz, ExtremeIntegersForEveryOption) {
  const std::vector<std::string> texts{
      "-1", "0", "1", "1000", "1001", "1000000", "1000001", "2147483647", "2147483648",
      "-2147483649", "9223372036854775807", "9223372036854775808", "1e15", "1e16", "1e300",
      "-0", "0x10", "1.5", "4294967296"};
  Outcomes o;
  ModelPtr m = FuzzPendulum();
  Rng r(static_cast<uint64_t>(EnvLong("MJCENIC_FUZZ_SEED", 1)));
  for (const std::string& key : OptionKeys()) {
    for (const std::string& text : texts) {
      StepperOptions opt;
      const absl::Status s = SetOption(&opt, key, text);
      if (!s.ok()) {
        EXPECT_NE(std::string(s.message()).find("'" + key + "'"), std::string::npos) << s.message();
        ++o.clear_error;
        continue;
      }
      if (!Chance(r, 0.1)) {  // stepping every accepted value would take minutes
        ++o.ran_correctly;
        continue;
      }
      if (opt.max_steps_per_call == 0 || opt.max_steps_per_call > 20000) opt.max_steps_per_call = 20000;
      auto st = Stepper::Create(m.get(), opt);
      if (!st.ok()) {
        EXPECT_TRUE(StartsWithMjcenic(st.status())) << key << "=" << text << ": " << st.status();
        ++o.clear_error;
        continue;
      }
      DataPtr d(mj_makeData(m.get()));
      const absl::Status step = (*st)->AdvanceTo(d.get(), 0.01);
      EXPECT_TRUE(step.ok() || StartsWithMjcenic(step)) << key << "=" << text << ": " << step;
      ++(step.ok() ? o.ran_correctly : o.clear_error);
    }
  }
  Report("extreme integers", o);
  EXPECT_EQ(o.silent_wrong, 0);
}

// Tolerances at both ends of their ranges and in combination, in every mode:
// a clear error, or the pendulum swings (never frozen by a Newton loop that
// stops at the warm start).
TEST(Fuzz, TolerancesAtBothEndsAndTogether) {
  const long n = 4 * ClassIterations();
  Rng r(static_cast<uint64_t>(EnvLong("MJCENIC_FUZZ_SEED", 1)) * 7919);
  ModelPtr m = FuzzPendulum();
  Outcomes o;
  for (long i = 0; i < n; ++i) {
    StepperOptions opt;
    std::string log;
    auto set = [&](const char* key, const std::vector<std::string>& values) {
      const std::string& v = Pick(r, values);
      log += std::string(" ") + key + "=" + v;
      const absl::Status s = SetOption(&opt, key, v);
      if (!s.ok()) {
        EXPECT_NE(std::string(s.message()).find(key), std::string::npos) << s.message();
        log += "(refused)";
      }
    };
    set("mode", {"fixed", "cenic", "trapezoid"});
    set("accuracy", {"1e-12", "1e-9", "1e-6", "1e-3", "0.1", "1", "1.0000001", "10", "1e300"});
    if (Chance(r, 0.5)) set("kappa", {"1e-12", "1e-6", "1e-3", "0.1", "1", "2", "100"});
    if (Chance(r, 0.5)) set("solver_tolerance", {"1e-300", "1e-12", "1e-8", "1e-3", "1e-2", "1"});
    if (Chance(r, 0.4)) set("length_scale", {"0", "1e-6", "1e-3", "1", "1e3"});
    if (Chance(r, 0.4)) set("error_per_unit_step", {"0", "1e-9", "0.1", "1", "1e9"});
    if (Chance(r, 0.5)) set("dense_output", {"true", "false"});
    if (Chance(r, 0.3)) set("adaptive_tolerance", {"true", "false"});
    opt.max_steps_per_call = 20000;
    auto st = Stepper::Create(m.get(), opt);
    if (!st.ok()) {
      EXPECT_TRUE(StartsWithMjcenic(st.status())) << log << ": " << st.status();
      ++o.clear_error;
      continue;
    }
    DataPtr d(mj_makeData(m.get()));
    d->qpos[0] = 1.0;
    absl::Status s;
    for (int k = 0; k < 50 && s.ok(); ++k) s = (*st)->AdvanceTo(d.get(), 0.01 * (k + 1));
    if (!s.ok()) {
      EXPECT_TRUE(StartsWithMjcenic(s)) << log << ": " << s;
      ++o.clear_error;
    } else if (d->qpos[0] < 0.5 && std::isfinite(d->qpos[0])) {
      ++o.ran_correctly;
    } else {
      ADD_FAILURE() << "frozen or lost pendulum (qpos " << d->qpos[0] << ", "
                    << (*st)->stats().newton_iterations << " Newton iterations):" << log;
      ++o.silent_wrong;
    }
  }
  Report("tolerances", o);
}

// Model edits between calls, in every mode and with dense output on and
// off: a large dof_damping stops the pendulum, a reversed motor gain reverses
// it, a much lighter body whirls, in the first call after the edit.
TEST(Fuzz, ModelEditsBetweenCallsInEveryMode) {
  const long n = 2 * ClassIterations();
  Rng r(static_cast<uint64_t>(EnvLong("MJCENIC_FUZZ_SEED", 1)) * 104729);
  Outcomes o;
  for (long i = 0; i < n; ++i) {
    ModelPtr m = FuzzPendulum();
    DataPtr d(mj_makeData(m.get()));
    d->qpos[0] = 1.0;
    d->ctrl[0] = 1;
    StepperOptions opt;
    const std::string mode = Pick(r, std::vector<std::string>{"fixed", "cenic", "trapezoid"});
    ASSERT_TRUE(SetOption(&opt, "mode", mode).ok());
    opt.dense_output = Chance(r, 0.5);
    opt.accuracy = Pick(r, std::vector<double>{1e-2, 1e-3});
    auto s = Stepper::Create(m.get(), opt).value();
    const int warm = Int(r, 50, 150);
    for (int k = 0; k < warm; ++k) ASSERT_TRUE(s->Step(d.get()).ok());
    const double v = d->qvel[0];
    const int edit = Int(r, 0, 2);
    if (edit == 0) m->dof_damping[0] = Pick(r, std::vector<double>{1e5, 1e6, 1e8});
    if (edit == 1) m->actuator_gainprm[0] = (v > 0 ? -1 : 1) * Pick(r, std::vector<double>{1e5, 1e6});
    if (edit == 2) {
      m->body_mass[1] = 1e-4;
      for (int k = 0; k < 3; ++k) m->body_inertia[3 + k] = 1e-6;
    }
    const absl::Status st = s->Step(d.get());
    const double w = d->qvel[0];
    const bool effect = edit == 0 ? std::abs(w) < 1e-2 * std::abs(v)
                        : edit == 1 ? w * v < 0
                                    : std::abs(w - v) > 1.0;
    if (!st.ok()) {
      EXPECT_TRUE(StartsWithMjcenic(st)) << st;
      ++o.clear_error;
    } else if (effect) {
      ++o.ran_correctly;
    } else {
      ADD_FAILURE() << "edit " << edit << " ignored in mode " << mode << " dense_output "
                    << opt.dense_output << ": qvel " << v << " -> " << w;
      ++o.silent_wrong;
    }
  }
  Report("model edits between calls", o);
}

}  // namespace
}  // namespace mjcenic
