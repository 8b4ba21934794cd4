// mjcenic-run: simulate an MJCF file with mjcenic (optionally also with
// mj_step) holding ctrl at its start values, and report as JSON.
//
//   mjcenic-run MODEL.xml [--duration T] [--keyframe NAME | --no-keyframe]
//               [--json OUT] [--compare-mjstep]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "mjcenic/version.h"  // generated in the build tree (cmake/version.h.in)
#include "plugin.h"

namespace {

struct Args {
  std::string model, json, keyframe;
  double duration = 1.0;
  double chunk = 0.05;        // error-controlled modes: advance_to interval [s]
  bool chunk_is_step = false; // --chunk step: one mj_step-signature call per timestep
  bool no_keyframe = false, compare = false;
  int ccd_iterations = 0;      // > 0: overrides the model's <option ccd_iterations>
  double ccd_tolerance = 0;    // > 0: overrides the model's <option ccd_tolerance>
  mjcenic::StepperOptions options;  // the command line's alone (checked while parsing)
  // The option flags as given, in order: applied over the model's mjcenic
  // plugin <config> (as the Python CLI and mjcenic.Stepper do).
  std::vector<std::pair<std::string, std::string>> given;
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

// A positive finite number from the whole of v (false if it is not one).
bool PositiveNumber(const char* v, double* x) {
  char* end;
  *x = std::strtod(v, &end);
  return !*end && *x > 0 && std::isfinite(*x);
}

// The flags that take a value: v is that value. False (after a message) on a
// bad value; *known false if s is not such a flag.
bool ParseValueFlag(const std::string& s, const char* v, Args* a, bool* known) {
  *known = true;
  double x;
  if (s == "--duration") {
    char* end;
    a->duration = std::strtod(v, &end);
    if (*end || !(a->duration >= 0) || !std::isfinite(a->duration)) {
      std::fprintf(stderr, "mjcenic-run: bad --duration '%s'\n", v);
      return false;
    }
  } else if (s == "--mode") {
    if (!mjcenic::ParseMode(v, &a->options.mode)) {
      std::fprintf(stderr, "mjcenic-run: bad --mode '%s' (fixed, cenic or trapezoid)\n", v);
      return false;
    }
    a->given.emplace_back("mode", v);
  } else if (s == "--accuracy" || s == "--max-step") {
    if (!PositiveNumber(v, &x)) {
      std::fprintf(stderr, "mjcenic-run: bad %s '%s' (must be > 0)\n", s.c_str(), v);
      return false;
    }
    (s == "--accuracy" ? a->options.accuracy : a->options.max_step) = x;
    a->given.emplace_back(s == "--accuracy" ? "accuracy" : "max_step", v);
  } else if (s == "--chunk") {
    if (std::strcmp(v, "step") == 0) {
      a->chunk_is_step = true;
    } else if (!PositiveNumber(v, &a->chunk)) {
      std::fprintf(stderr, "mjcenic-run: bad --chunk '%s' (seconds > 0, or 'step')\n", v);
      return false;
    }
  } else if (s == "--option") {
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
    a->given.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  } else if (s == "--ccd-iterations" || s == "--ccd-tolerance") {
    const bool iters = s == "--ccd-iterations";
    if (!PositiveNumber(v, &x) || (iters && (x != std::floor(x) || x > 10000))) {
      std::fprintf(stderr, "mjcenic-run: bad %s '%s' (%s)\n", s.c_str(), v,
                   iters ? "an integer from 1 to 10000" : "must be > 0");
      return false;
    }
    if (iters) a->ccd_iterations = static_cast<int>(x); else a->ccd_tolerance = x;
  } else if (s == "--keyframe") {
    a->keyframe = v;
  } else if (s == "--json") {
    a->json = v;
  } else {
    *known = false;
  }
  return true;
}

bool TakesValue(const std::string& s) {
  for (const char* f : {"--duration", "--mode", "--accuracy", "--max-step", "--chunk", "--option",
                        "--ccd-iterations", "--ccd-tolerance", "--keyframe", "--json"})
    if (s == f) return true;
  return false;
}

// Checks between arguments, after all are read.
bool CheckArgs(const Args& a) {
  if (a.model.empty()) {
    Usage();
    return false;
  }
  // Each chunk is one AdvanceTo target (i + 1)·chunk: their number must be
  // countable and each must move time forward.
  constexpr double kMaxChunks = 1e9;
  if (!a.chunk_is_step && a.duration / a.chunk > kMaxChunks) {
    std::fprintf(stderr,
                 "mjcenic-run: --chunk %g s is too small for --duration %g s (at most %g chunks: "
                 "use --chunk >= %g, or --chunk step)\n",
                 a.chunk, a.duration, kMaxChunks, a.duration / kMaxChunks);
    return false;
  }
  if (a.no_keyframe && !a.keyframe.empty()) {
    std::fprintf(stderr, "mjcenic-run: --keyframe and --no-keyframe exclude each other\n");
    return false;
  }
  return true;
}

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (TakesValue(s)) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "mjcenic-run: %s needs a value\n", s.c_str());
        return false;
      }
      bool known;
      if (!ParseValueFlag(s, argv[++i], a, &known)) return false;
    } else if (s == "--no-keyframe") {
      a->no_keyframe = true;
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
  return CheckArgs(*a);
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

// The model of args with the collider budget applied, and its start
// keyframe (-1: none). Null (after a message) if it cannot be loaded.
mjModel* LoadModel(const Args& args, int* key) {
  char error[1024] = "";
  mjModel* m = mj_loadXML(args.model.c_str(), nullptr, error, sizeof(error));
  if (!m) {
    std::fprintf(stderr, "mjcenic-run: could not load '%s': %s\n", args.model.c_str(), error);
    return nullptr;
  }
  if (args.ccd_iterations > 0) {
    // EPA keeps its polytope (≈ 0.5 KB per iteration) on the mjData arena.
    if (args.ccd_iterations > m->opt.ccd_iterations)
      m->narena += 1024L * (args.ccd_iterations - m->opt.ccd_iterations);
    m->opt.ccd_iterations = args.ccd_iterations;
  }
  if (args.ccd_tolerance > 0) m->opt.ccd_tolerance = args.ccd_tolerance;
  *key = -1;
  if (!args.keyframe.empty()) {
    *key = mj_name2id(m, mjOBJ_KEY, args.keyframe.c_str());
    if (*key < 0) {
      std::fprintf(stderr, "mjcenic-run: no keyframe named '%s' in %s\n", args.keyframe.c_str(),
                   args.model.c_str());
      mj_deleteModel(m);
      return nullptr;
    }
  } else if (!args.no_keyframe && m->nkey > 0) {
    *key = 0;
  }
  return m;
}

void Start(const mjModel* m, mjData* d, int key) {
  if (key >= 0) mj_resetDataKeyframe(m, d, key); else mj_resetData(m, d);
}

struct Run {  // one simulator's run of the duration
  double wall = 0, drift = 0, penetration = 0;
  bool finite = true;
};

// mjcenic: fixed mode steps like mj_step; error-controlled modes advance in
// --chunk intervals so that the controller can choose steps longer than
// opt.timestep, or call Step() per timestep like an mj_step loop.
Run RunMjcenic(const Args& args, const mjModel* m, mjData* d, mjcenic::Stepper* stepper,
               const std::vector<double>& q_start, std::vector<std::string>* warnings) {
  Run r;
  bool ok = true;
  const long nsteps = std::lround(args.duration / m->opt.timestep);
  const auto t0 = std::chrono::steady_clock::now();
  const bool per_step = args.options.mode == mjcenic::Mode::kFixed || args.chunk_is_step;
  const double t_end = per_step ? nsteps * m->opt.timestep : args.duration;
  const long nchunks =
      per_step ? nsteps : static_cast<long>(std::ceil(args.duration / args.chunk - 1e-9));
  for (long i = 0; i < nchunks; ++i) {
    const absl::Status s =
        per_step ? stepper->Step(d) : stepper->AdvanceTo(d, std::min(t_end, (i + 1) * args.chunk));
    if (!s.ok()) {
      warnings->push_back(std::string(s.message()));
      ok = false;
      break;
    }
    r.drift = std::max(r.drift, JointDrift(m, d, q_start));
  }
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.finite = ok && Finite(m, d);
  return r;
}

Run RunMjStep(const Args& args, const mjModel* m, int key, const std::vector<double>& q_start) {
  Run r;
  mjData* e = mj_makeData(m);
  Start(m, e, key);
  const long nsteps = std::lround(args.duration / m->opt.timestep);
  const auto s0 = std::chrono::steady_clock::now();
  for (long i = 0; i < nsteps; ++i) {
    mj_step(m, e);
    r.penetration = std::max(r.penetration, mjcenic::MaxPenetration(e));
    r.drift = std::max(r.drift, JointDrift(m, e, q_start));
  }
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
  r.finite = Finite(m, e);
  mj_deleteData(e);
  return r;
}

std::string Json(const Args& args, const mjModel* m, const mjData* d, int key,
                 const mjcenic::StepperStats& st, const Run& run, const Run& mj,
                 const std::vector<std::string>& warnings) {
  const mjcenic::StepperOptions& options = args.options;
  std::ostringstream js;
  const char* key_name = key >= 0 ? mj_id2name(m, mjOBJ_KEY, key) : nullptr;
  js << "{\n  \"model\": " << Quote(args.model) << ",\n  \"nq\": " << m->nq
     << ",\n  \"nv\": " << m->nv << ",\n  \"nu\": " << m->nu << ",\n  \"mode\": "
     << Quote(mjcenic::ToString(options.mode)) << ",\n  \"timestep\": " << Num(m->opt.timestep)
     << ",\n  \"keyframe\": "
     << (key >= 0 ? Quote(key_name ? key_name : std::to_string(key)) : "null")
     << ",\n  \"sim_time\": " << Num(d->time) << ",\n  \"wall_time\": " << Num(run.wall)
     << ",\n  \"accuracy\": " << Num(options.accuracy)
     << ",\n  \"ccd_iterations\": " << m->opt.ccd_iterations
     << ",\n  \"ccd_tolerance\": " << Num(m->opt.ccd_tolerance)
     << ",\n  \"accepted_steps\": " << st.steps;  // alias of steps
  // Every statistic of the table (options_table.h), under its own name.
#define MJCENIC_JSON_STAT(name, type, doc) \
  js << ",\n  \"" #name "\": " << JsonValue(st.name);
  MJCENIC_STATS(MJCENIC_JSON_STAT)
#undef MJCENIC_JSON_STAT
  js << ",\n  \"max_joint_drift\": " << Num(run.drift) << ",\n  \"finite\": "
     << (run.finite ? "true" : "false") << ",\n  \"final_qpos\": [";
  for (int i = 0; i < m->nq; ++i) js << (i ? ", " : "") << Num(d->qpos[i]);
  js << "],\n  \"warnings\": [";
  for (size_t i = 0; i < warnings.size(); ++i) js << (i ? ", " : "") << Quote(warnings[i]);
  js << "]";
  if (args.compare) {
    js << ",\n  \"mjstep_wall_time\": " << Num(mj.wall)
       << ",\n  \"mjstep_max_penetration\": " << Num(mj.penetration)
       << ",\n  \"mjstep_max_joint_drift\": " << Num(mj.drift)
       << ",\n  \"mjstep_finite\": " << (mj.finite ? "true" : "false");
  }
  js << "\n}\n";
  return js.str();
}

void PrintSummary(const Args& args, const mjModel* m, const mjData* d,
                  const mjcenic::StepperStats& st, const Run& run, const Run& mj,
                  const std::vector<std::string>& warnings) {
  const mjcenic::StepperOptions& options = args.options;
  std::printf("mjcenic-run %s\n  nq %ld  nv %ld  nu %ld  h %g s  %s\n", args.model.c_str(),
              static_cast<long>(m->nq), static_cast<long>(m->nv), static_cast<long>(m->nu),
              m->opt.timestep, run.finite ? "finite" : "FAILED");
  std::printf("  simulated %.3f s in %.3f s wall (%.1fx real time), %ld steps, %ld Newton "
              "iterations (%.2f per solve)\n",
              d->time, run.wall, run.wall > 0 ? d->time / run.wall : 0.0, st.steps,
              st.newton_iterations, st.solves ? double(st.newton_iterations) / st.solves : 0.0);
  if (options.mode != mjcenic::Mode::kFixed)
    std::printf("  mode %s, accuracy %g: %ld accepted + %ld rejected steps, h min/median/max "
                "%.3g/%.3g/%.3g s, %ld solves\n",
                mjcenic::ToString(options.mode), options.accuracy, st.steps, st.rejected_steps,
                st.h_min, st.h_median, st.h_max, st.solves);
  std::printf("  max penetration %.3g mm, max joint drift %.3g\n", 1e3 * st.max_penetration,
              run.drift);
  if (args.compare)
    std::printf("  mj_step: %.3f s wall (%.1fx real time), max penetration %.3g mm, max joint "
                "drift %.3g\n",
                mj.wall, mj.wall > 0 ? d->time / mj.wall : 0.0, 1e3 * mj.penetration, mj.drift);
  for (const std::string& w : warnings) std::printf("  warning: %s\n", w.c_str());
}

}  // namespace

// The value of attribute `name` in the tag text, or false if absent.
bool Attribute(const std::string& tag, const char* name, std::string* value) {
  const std::string key = std::string(" ") + name + "=";
  size_t at = tag.find(key);
  if (at == std::string::npos) {
    for (const char ws : {'\n', '\t', '\r'})
      if ((at = tag.find(std::string(1, ws) + name + "=")) != std::string::npos) break;
    if (at == std::string::npos) return false;
  }
  const size_t open = at + key.size();
  if (open >= tag.size() || (tag[open] != '"' && tag[open] != '\'')) return false;
  const size_t close = tag.find(tag[open], open + 1);
  if (close == std::string::npos) return false;
  *value = tag.substr(open + 1, close - open - 1);
  return true;
}

// An empty <config key=... value=""/> of the mjcenic plugin in the MJCF text
// (MuJoCo compiles it like an absent key, so only the text shows it), named
// in the status; OK if there is none. Files pulled in by <include> are not read.
absl::Status CheckEmptyConfigValues(const std::string& path) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  const std::string xml = text.str();
  for (size_t at = 0; (at = xml.find("<plugin", at)) != std::string::npos;) {
    const size_t end = xml.find("</plugin>", at);
    const size_t head_end = xml.find('>', at);
    if (head_end == std::string::npos) break;
    std::string name;
    const std::string head = xml.substr(at, head_end - at);
    at = end == std::string::npos ? xml.size() : std::max(end, head_end);
    if (!Attribute(head, "plugin", &name) || name != "mjcenic") continue;
    const std::string block = xml.substr(head_end, at - head_end);
    for (size_t c = 0; (c = block.find("<config", c)) != std::string::npos; ++c) {
      const std::string tag = block.substr(c, block.find('>', c) - c);
      std::string key, value;
      if (Attribute(tag, "key", &key) && Attribute(tag, "value", &value) &&
          value.find_first_not_of(" \t\n\r") == std::string::npos)
        return absl::InvalidArgumentError("mjcenic plugin <config>: option '" + key +
                                          "' has an empty value (give a value or leave the "
                                          "key out)");
    }
  }
  return absl::OkStatus();
}

// The model's mjcenic plugin <config>, then the command line's options.
absl::Status ResolveArgsOptions(const mjModel* m, Args* args) {
  mjcenic::StepperOptions o;
  if (absl::Status s = mjcenic::plugin::OptionsFromModel(m, &o); !s.ok()) return s;
  for (const auto& [k, v] : args->given)
    if (absl::Status s = mjcenic::SetOption(&o, k, v); !s.ok()) return s;
  args->options = o;
  return absl::OkStatus();
}

int main(int argc, char** argv) {
  Args args;
  if (!Parse(argc, argv, &args)) return 2;
  // Models that declare the mjcenic plugin name it: register it before loading.
  mjcenic::plugin::Register();
  int key = -1;
  mjModel* m = LoadModel(args, &key);
  if (!m) return 1;
  absl::Status config =
      mjcenic::plugin::FindInstance(m) >= 0 ? CheckEmptyConfigValues(args.model) : absl::OkStatus();
  if (absl::Status s = config.ok() ? ResolveArgsOptions(m, &args) : config; !s.ok()) {
    std::fprintf(stderr, "mjcenic-run: %s\n", std::string(s.message()).c_str());
    mj_deleteModel(m);
    return 1;
  }
  auto stepper_or = mjcenic::Stepper::Create(m, args.options);
  if (!stepper_or.ok()) {
    std::fprintf(stderr, "mjcenic-run: %s\n", std::string(stepper_or.status().message()).c_str());
    mj_deleteModel(m);
    return 1;
  }
  mjcenic::Stepper& stepper = **stepper_or;
  std::vector<std::string> warnings = stepper.warnings();

  mjData* d = mj_makeData(m);
  Start(m, d, key);
  const std::vector<double> q_start(d->qpos, d->qpos + m->nq);
  const Run run = RunMjcenic(args, m, d, &stepper, q_start, &warnings);
  const mjcenic::StepperStats& st = stepper.stats();
  const Run mj = args.compare ? RunMjStep(args, m, key, q_start) : Run{};

  if (!args.json.empty()) {
    std::ofstream f(args.json);
    if (!f) {
      std::fprintf(stderr, "mjcenic-run: cannot write '%s'\n", args.json.c_str());
      return 1;
    }
    f << Json(args, m, d, key, st, run, mj, warnings);
  }
  PrintSummary(args, m, d, st, run, mj, warnings);
  mj_deleteData(d);
  mj_deleteModel(m);
  return run.finite ? 0 : 3;
}
