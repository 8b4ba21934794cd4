// mjcenic-run: simulate an MJCF file with mjcenic (optionally also with
// mj_step) holding ctrl at its start values, and report as JSON.
//
//   mjcenic-run MODEL.xml [--duration T] [--keyframe NAME | --no-keyframe]
//               [--json OUT] [--compare-mjstep]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "mjcenic/version.h"  // generated in the build tree (cmake/version.h.in)

namespace {

struct Args {
  std::string model, json, keyframe;
  double duration = 1.0;
  double chunk = 0.05;        // error-controlled modes: advance_to interval [s]
  bool chunk_is_step = false; // --chunk step: one mj_step-signature call per timestep
  bool no_keyframe = false, compare = false;
  int ccd_iterations = 0;      // > 0: overrides the model's <option ccd_iterations>
  double ccd_tolerance = 0;    // > 0: overrides the model's <option ccd_tolerance>
  mjcenic::StepperOptions options;
};

void Usage() {
  std::fprintf(stderr,
               "usage: mjcenic-run --version | MODEL.xml [--duration T] [--keyframe NAME | --no-keyframe]\n"
               "                   [--json OUT] [--compare-mjstep] [--mode fixed|cenic|trapezoid]\n"
               "                   [--accuracy A] [--max-step H] [--chunk DT|step]\n"
               "                   [--option KEY=VALUE]... [--ccd-iterations N] [--ccd-tolerance T]\n"
               "--chunk: error-controlled modes advance to multiples of DT (default 0.05 s);\n"
               "'step' calls the mj_step-signature Step() once per model timestep instead.\n"
               "--ccd-iterations/--ccd-tolerance: MuJoCo's convex collider (GJK/EPA) budget,\n"
               "set on the loaded model for both mjcenic and --compare-mjstep (the MJCF file\n"
               "is not changed). Deep overlaps of convex geoms need more than the default 35.\n");
}

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "mjcenic-run: %s needs a value\n", name);
        return nullptr;
      }
      return argv[++i];
    };
    if (s == "--duration") {
      const char* v = value("--duration");
      if (!v) return false;
      char* end;
      a->duration = std::strtod(v, &end);
      if (*end || !(a->duration >= 0) || !std::isfinite(a->duration)) {
        std::fprintf(stderr, "mjcenic-run: bad --duration '%s'\n", v);
        return false;
      }
    } else if (s == "--mode") {
      const char* v = value("--mode");
      if (!v) return false;
      if (!mjcenic::ParseMode(v, &a->options.mode)) {
        std::fprintf(stderr, "mjcenic-run: bad --mode '%s' (fixed, cenic or trapezoid)\n", v);
        return false;
      }
    } else if (s == "--accuracy" || s == "--max-step") {
      const char* v = value(s.c_str());
      if (!v) return false;
      char* end;
      const double x = std::strtod(v, &end);
      if (*end || !(x > 0) || !std::isfinite(x)) {
        std::fprintf(stderr, "mjcenic-run: bad %s '%s' (must be > 0)\n", s.c_str(), v);
        return false;
      }
      (s == "--accuracy" ? a->options.accuracy : a->options.max_step) = x;
    } else if (s == "--chunk") {
      const char* v = value("--chunk");
      if (!v) return false;
      if (std::strcmp(v, "step") == 0) {
        a->chunk_is_step = true;
      } else {
        char* end;
        a->chunk = std::strtod(v, &end);
        if (*end || !(a->chunk > 0) || !std::isfinite(a->chunk)) {
          std::fprintf(stderr, "mjcenic-run: bad --chunk '%s' (seconds > 0, or 'step')\n", v);
          return false;
        }
      }
    } else if (s == "--option") {
      const char* v = value("--option");
      if (!v) return false;
      const std::string kv = v;
      const size_t eq = kv.find('=');
      const absl::Status st =
          eq == std::string::npos
              ? absl::InvalidArgumentError("expected KEY=VALUE")
              : mjcenic::SetOption(&a->options, kv.substr(0, eq), kv.substr(eq + 1));
      if (!st.ok()) {
        std::fprintf(stderr, "mjcenic-run: --option '%s': %s\n", v,
                     std::string(st.message()).c_str());
        return false;
      }
    } else if (s == "--ccd-iterations" || s == "--ccd-tolerance") {
      const char* v = value(s.c_str());
      if (!v) return false;
      char* end;
      const double x = std::strtod(v, &end);
      const bool iters = s == "--ccd-iterations";
      if (*end || !(x > 0) || !std::isfinite(x) || (iters && (x != std::floor(x) || x > 10000))) {
        std::fprintf(stderr, "mjcenic-run: bad %s '%s' (%s)\n", s.c_str(), v,
                     iters ? "an integer from 1 to 10000" : "must be > 0");
        return false;
      }
      if (iters) a->ccd_iterations = static_cast<int>(x); else a->ccd_tolerance = x;
    } else if (s == "--keyframe") {
      const char* v = value("--keyframe");
      if (!v) return false;
      a->keyframe = v;
    } else if (s == "--no-keyframe") {
      a->no_keyframe = true;
    } else if (s == "--json") {
      const char* v = value("--json");
      if (!v) return false;
      a->json = v;
    } else if (s == "--compare-mjstep") {
      a->compare = true;
    } else if (s == "-h" || s == "--help") {
      Usage();
      std::exit(0);
    } else if (s == "--version") {
      std::printf("mjcenic-run %s (MuJoCo %s, built against %s)\n", MJCENIC_VERSION_STRING,
                  mj_versionString(), MJCENIC_MUJOCO_BUILD_VERSION_STRING);
      std::exit(0);
    } else if (!s.empty() && s[0] == '-') {
      std::fprintf(stderr, "mjcenic-run: unknown option '%s'\n", s.c_str());
      return false;
    } else if (a->model.empty()) {
      a->model = s;
    } else {
      std::fprintf(stderr, "mjcenic-run: more than one model given\n");
      return false;
    }
  }
  if (a->model.empty()) {
    Usage();
    return false;
  }
  // Each chunk is one AdvanceTo target (i + 1)·chunk: their number must be
  // countable and each must move time forward.
  constexpr double kMaxChunks = 1e9;
  if (!a->chunk_is_step && a->duration / a->chunk > kMaxChunks) {
    std::fprintf(stderr,
                 "mjcenic-run: --chunk %g s is too small for --duration %g s (at most %g chunks: "
                 "use --chunk >= %g, or --chunk step)\n",
                 a->chunk, a->duration, kMaxChunks, a->duration / kMaxChunks);
    return false;
  }
  if (a->no_keyframe && !a->keyframe.empty()) {
    std::fprintf(stderr, "mjcenic-run: --keyframe and --no-keyframe exclude each other\n");
    return false;
  }
  return true;
}

std::string Quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (c == '\n') o += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o + "\"";
}

std::string Num(double x) {
  if (!std::isfinite(x)) return "null";
  char b[64];
  std::snprintf(b, sizeof(b), "%.17g", x);
  return b;
}
std::string JsonValue(double x) { return Num(x); }
std::string JsonValue(long n) { return std::to_string(n); }

// Largest |q - q_start| over hinge and slide joints.
double JointDrift(const mjModel* m, const mjData* d, const std::vector<double>& q_start) {
  double drift = 0;
  for (int j = 0; j < m->njnt; ++j) {
    if (m->jnt_type[j] != mjJNT_HINGE && m->jnt_type[j] != mjJNT_SLIDE) continue;
    const int a = m->jnt_qposadr[j];
    drift = std::max(drift, std::abs(d->qpos[a] - q_start[a]));
  }
  return drift;
}

bool Finite(const mjModel* m, const mjData* d) {
  for (int i = 0; i < m->nq; ++i) if (!std::isfinite(d->qpos[i])) return false;
  for (int i = 0; i < m->nv; ++i) if (!std::isfinite(d->qvel[i])) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!Parse(argc, argv, &args)) return 2;

  char error[1024] = "";
  mjModel* m = mj_loadXML(args.model.c_str(), nullptr, error, sizeof(error));
  if (!m) {
    std::fprintf(stderr, "mjcenic-run: could not load '%s': %s\n", args.model.c_str(), error);
    return 1;
  }
  if (args.ccd_iterations > 0) {
    // EPA keeps its polytope (≈ 0.5 KB per iteration) on the mjData arena.
    if (args.ccd_iterations > m->opt.ccd_iterations)
      m->narena += 1024L * (args.ccd_iterations - m->opt.ccd_iterations);
    m->opt.ccd_iterations = args.ccd_iterations;
  }
  if (args.ccd_tolerance > 0) m->opt.ccd_tolerance = args.ccd_tolerance;
  int key = -1;
  if (!args.keyframe.empty()) {
    key = mj_name2id(m, mjOBJ_KEY, args.keyframe.c_str());
    if (key < 0) {
      std::fprintf(stderr, "mjcenic-run: no keyframe named '%s' in %s\n", args.keyframe.c_str(),
                   args.model.c_str());
      mj_deleteModel(m);
      return 1;
    }
  } else if (!args.no_keyframe && m->nkey > 0) {
    key = 0;
  }
  auto start = [&](mjData* d) {
    if (key >= 0) mj_resetDataKeyframe(m, d, key); else mj_resetData(m, d);
  };

  const mjcenic::StepperOptions& options = args.options;
  auto stepper_or = mjcenic::Stepper::Create(m, options);
  if (!stepper_or.ok()) {
    std::fprintf(stderr, "mjcenic-run: %s\n", std::string(stepper_or.status().message()).c_str());
    mj_deleteModel(m);
    return 1;
  }
  mjcenic::Stepper& stepper = **stepper_or;
  std::vector<std::string> warnings = stepper.warnings();

  mjData* d = mj_makeData(m);
  start(d);
  const std::vector<double> q_start(d->qpos, d->qpos + m->nq);
  const long nsteps = std::lround(args.duration / m->opt.timestep);
  double drift = 0;
  bool ok = true;
  const auto t0 = std::chrono::steady_clock::now();
  // Fixed mode steps like mj_step; error-controlled modes advance in --chunk
  // intervals so that the controller can choose steps longer than
  // opt.timestep, or call Step() per timestep like an mj_step loop.
  const bool fixed = options.mode == mjcenic::Mode::kFixed;
  const bool per_step = fixed || args.chunk_is_step;
  const double t_end = per_step ? nsteps * m->opt.timestep : args.duration;
  const long nchunks =
      per_step ? nsteps : static_cast<long>(std::ceil(args.duration / args.chunk - 1e-9));
  for (long i = 0; i < nchunks; ++i) {
    const absl::Status s =
        per_step ? stepper.Step(d) : stepper.AdvanceTo(d, std::min(t_end, (i + 1) * args.chunk));
    if (!s.ok()) {
      warnings.push_back(std::string(s.message()));
      ok = false;
      break;
    }
    drift = std::max(drift, JointDrift(m, d, q_start));
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool finite = ok && Finite(m, d);
  const mjcenic::StepperStats& st = stepper.stats();

  double mj_wall = 0, mj_pen = 0, mj_drift = 0;
  bool mj_finite = true;
  if (args.compare) {
    mjData* e = mj_makeData(m);
    start(e);
    const auto s0 = std::chrono::steady_clock::now();
    for (long i = 0; i < nsteps; ++i) {
      mj_step(m, e);
      mj_pen = std::max(mj_pen, mjcenic::MaxPenetration(e));
      mj_drift = std::max(mj_drift, JointDrift(m, e, q_start));
    }
    mj_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    mj_finite = Finite(m, e);
    mj_deleteData(e);
  }

  std::ostringstream js;
  js << "{\n  \"model\": " << Quote(args.model) << ",\n  \"nq\": " << m->nq
     << ",\n  \"nv\": " << m->nv << ",\n  \"nu\": " << m->nu << ",\n  \"mode\": "
     << Quote(mjcenic::ToString(options.mode)) << ",\n  \"timestep\": " << Num(m->opt.timestep)
     << ",\n  \"keyframe\": " << (key >= 0 ? Quote(mj_id2name(m, mjOBJ_KEY, key) ? mj_id2name(m, mjOBJ_KEY, key) : std::to_string(key)) : "null")
     << ",\n  \"sim_time\": " << Num(d->time) << ",\n  \"wall_time\": " << Num(wall)
     << ",\n  \"accuracy\": " << Num(options.accuracy)
     << ",\n  \"ccd_iterations\": " << m->opt.ccd_iterations
     << ",\n  \"ccd_tolerance\": " << Num(m->opt.ccd_tolerance)
     << ",\n  \"accepted_steps\": " << st.steps;  // alias of steps
  // Every statistic of the table (options_table.h), under its own name.
#define MJCENIC_JSON_STAT(name, type, doc) \
  js << ",\n  \"" #name "\": " << JsonValue(st.name);
  MJCENIC_STATS(MJCENIC_JSON_STAT)
#undef MJCENIC_JSON_STAT
  js << ",\n  \"max_joint_drift\": " << Num(drift) << ",\n  \"finite\": "
     << (finite ? "true" : "false") << ",\n  \"final_qpos\": [";
  for (int i = 0; i < m->nq; ++i) js << (i ? ", " : "") << Num(d->qpos[i]);
  js << "],\n  \"warnings\": [";
  for (size_t i = 0; i < warnings.size(); ++i) js << (i ? ", " : "") << Quote(warnings[i]);
  js << "]";
  if (args.compare) {
    js << ",\n  \"mjstep_wall_time\": " << Num(mj_wall)
       << ",\n  \"mjstep_max_penetration\": " << Num(mj_pen)
       << ",\n  \"mjstep_max_joint_drift\": " << Num(mj_drift)
       << ",\n  \"mjstep_finite\": " << (mj_finite ? "true" : "false");
  }
  js << "\n}\n";
  if (!args.json.empty()) {
    std::ofstream f(args.json);
    if (!f) {
      std::fprintf(stderr, "mjcenic-run: cannot write '%s'\n", args.json.c_str());
      return 1;
    }
    f << js.str();
  }

  std::printf("mjcenic-run %s\n  nq %ld  nv %ld  nu %ld  h %g s  %s\n", args.model.c_str(),
              static_cast<long>(m->nq), static_cast<long>(m->nv), static_cast<long>(m->nu),
              m->opt.timestep, finite ? "finite" : "FAILED");
  std::printf("  simulated %.3f s in %.3f s wall (%.1fx real time), %ld steps, %ld Newton "
              "iterations (%.2f per solve)\n",
              d->time, wall, wall > 0 ? d->time / wall : 0.0, st.steps, st.newton_iterations,
              st.solves ? double(st.newton_iterations) / st.solves : 0.0);
  if (options.mode != mjcenic::Mode::kFixed)
    std::printf("  mode %s, accuracy %g: %ld accepted + %ld rejected steps, h min/median/max "
                "%.3g/%.3g/%.3g s, %ld solves\n",
                mjcenic::ToString(options.mode), options.accuracy, st.steps, st.rejected_steps,
                st.h_min, st.h_median, st.h_max, st.solves);
  std::printf("  max penetration %.3g mm, max joint drift %.3g\n", 1e3 * st.max_penetration,
              drift);
  if (args.compare)
    std::printf("  mj_step: %.3f s wall (%.1fx real time), max penetration %.3g mm, max joint "
                "drift %.3g\n",
                mj_wall, mj_wall > 0 ? d->time / mj_wall : 0.0, 1e3 * mj_pen, mj_drift);
  for (const std::string& w : warnings) std::printf("  warning: %s\n", w.c_str());
  mj_deleteData(d);
  mj_deleteModel(m);
  return finite ? 0 : 3;
}
