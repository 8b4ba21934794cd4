// The C API (plugin/mjcenic.h) and the MJCF plugin: model checks, the
// registry behind mjcenic_step, plugin config errors, statistics by name.
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic.h"
#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::ModelFromXml;
using test_util::ModelPath;
using test_util::ModelPtr;

const char* kSphere = R"(<mujoco>%s
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 1"><freejoint/><geom type="sphere" size=".1" mass="1"/></body>
  </worldbody>
</mujoco>)";

std::string Sphere(const std::string& extension = "") {
  char buf[2048];
  std::snprintf(buf, sizeof(buf), kSphere, extension.c_str());
  return buf;
}

std::string Plugin(const std::string& instances) {
  return "<extension><plugin plugin=\"mjcenic\">" + instances + "</plugin></extension>";
}

// True if mjcenic_step advanced d by one timestep without a warning.
bool SteppedCleanly(const mjModel* m, mjData* d) {
  const double t = d->time;
  mjcenic_step(m, d);
  return d->time == t + m->opt.timestep && d->warning[mjWARN_BADQACC].number == 0;
}

// New mjData (and mjModel) at freed addresses, without
// mjcenic_forget, as code written around mj_step does. Before the fix this
// loop reused steppers of freed models (heap corruption).
TEST(CApi, MjcenicStepDetectsNewModelAndDataAtReusedAddresses) {
  const std::string files[2] = {ModelPath("sphere_plane.xml"), ModelPath("pendulum.xml")};
  int ok = 0;
  for (int i = 0; i < 200; ++i) {
    char err[1000];
    mjModel* m = mj_loadXML(files[i % 2].c_str(), nullptr, err, sizeof(err));
    ASSERT_NE(m, nullptr) << err;
    mjData* d = mj_makeData(m);
    ok += SteppedCleanly(m, d) && SteppedCleanly(m, d);
    mj_deleteData(d);
    mj_deleteModel(m);
  }
  EXPECT_EQ(ok, 200);
  EXPECT_LE(mjcenic_registry_size(), 64);
}

// The same data stepped on keeps its stepper (the step-size controller goes
// on): identical to a C++ Stepper stepping the same data.
TEST(CApi, MjcenicStepKeepsOneStepperPerLiveData) {
  std::string error;
  ModelPtr m = ModelFromXml(Sphere(), &error);
  ASSERT_TRUE(m) << error;
  mjData* d = mj_makeData(m.get());
  mjData* e = mj_makeData(m.get());
  auto s = Stepper::Create(m.get()).value();
  for (int i = 0; i < 300; ++i) {
    mjcenic_step(m.get(), d);
    ASSERT_TRUE(s->Step(e).ok());
  }
  for (int i = 0; i < m->nq; ++i) EXPECT_EQ(d->qpos[i], e->qpos[i]) << i;
  // A reset (time moved by the caller) starts a fresh stepper: like a new one.
  mj_resetData(m.get(), d);
  mj_resetData(m.get(), e);
  auto fresh = Stepper::Create(m.get()).value();
  for (int i = 0; i < 50; ++i) {
    mjcenic_step(m.get(), d);
    ASSERT_TRUE(fresh->Step(e).ok());
  }
  for (int i = 0; i < m->nq; ++i) EXPECT_EQ(d->qpos[i], e->qpos[i]) << i;
  mjcenic_forget(d);
  mj_deleteData(d);
  mj_deleteData(e);
}

TEST(CApi, RegistryIsBounded) {
  std::string error;
  ModelPtr m = ModelFromXml(Sphere(), &error);
  ASSERT_TRUE(m) << error;
  std::vector<mjData*> datas;
  for (int i = 0; i < 150; ++i) {
    datas.push_back(mj_makeData(m.get()));
    ASSERT_TRUE(SteppedCleanly(m.get(), datas.back()));
    ASSERT_LE(mjcenic_registry_size(), 64);
  }
  // At most 64, and as many as that: every live data up to the bound keeps
  // its stepper (docs/c-api.md).
  EXPECT_EQ(mjcenic_registry_size(), 64);
  // Evicted datas get a fresh stepper and still step.
  for (mjData* d : datas) ASSERT_TRUE(SteppedCleanly(m.get(), d));
  for (mjData* d : datas) {
    mjcenic_forget(d);
    mj_deleteData(d);
  }
  EXPECT_EQ(mjcenic_registry_size(), 0);
}

// A stepper given the mjData of another model.
TEST(CApi, StepperRefusesDataOfAnotherModel) {
  std::string error;
  ModelPtr m = ModelFromXml(Sphere(), &error);
  ASSERT_TRUE(m) << error;
  char err[1000];
  ModelPtr other(mj_loadXML(ModelPath("pendulum.xml").c_str(), nullptr, err, sizeof(err)));
  ASSERT_TRUE(other) << err;
  mjcenicStepper* s = mjcenic_create(m.get(), err, sizeof(err));
  ASSERT_NE(s, nullptr) << err;
  mjData* d = mj_makeData(other.get());
  const std::vector<double> q(d->qpos, d->qpos + other->nq);
  EXPECT_EQ(mjcenic_stepper_step(s, d, err, sizeof(err)), 1);
  EXPECT_NE(std::strstr(err, "not made for"), nullptr) << err;
  EXPECT_EQ(mjcenic_advance_to(s, d, 1.0, err, sizeof(err)), 1);
  EXPECT_EQ(mjcenic_step_once(s, d, err, sizeof(err)), 1);
  for (int i = 0; i < other->nq; ++i) EXPECT_EQ(d->qpos[i], q[i]);
  EXPECT_EQ(d->time, 0);
  // mjcenic_step with a mismatched pair: a warning, no step.
  mjcenic_step(m.get(), d);
  EXPECT_EQ(d->time, 0);
  EXPECT_GT(d->warning[mjWARN_BADQACC].number, 0);
  mj_deleteData(d);
  // Its own data steps.
  mjData* own = mj_makeData(m.get());
  EXPECT_EQ(mjcenic_stepper_step(s, own, err, sizeof(err)), 0) << err;
  mj_deleteData(own);
  mjcenic_destroy(s);
}

// What mj_loadXML's error says, not only stderr.
std::string CompileError(const std::string& xml) {
  std::string error;
  ModelPtr m = ModelFromXml(xml, &error);
  return m ? "" : error;
}

TEST(Plugin, BadConfigValueErrorNamesTheKey) {
  const std::string e = CompileError(
      Sphere(Plugin(R"(<instance name="c"><config key="stiction_tolerance" value="-3"/></instance>)")));
  // The error itself (its first line; MuJoCo appends the compile warnings
  // after it), not MuJoCo's generic "plugin->init failed".
  const std::string first = e.substr(0, e.find('\n'));
  EXPECT_NE(first.find("option 'stiction_tolerance': bad value '-3' (expected > 0)"),
            std::string::npos) << e;
}

TEST(Plugin, SecondInstanceIsAnError) {
  const std::string e = CompileError(Sphere(Plugin(
      R"(<instance name="a"/><instance name="b"><config key="accuracy" value="1e-2"/></instance>)")));
  EXPECT_NE(e.find("more than one mjcenic plugin instance ('a' and 'b')"), std::string::npos) << e;
}

// models/clutter.xml with a 40 KB arena overflows it as the
// clutter settles: mj_step calls mju_error. The C API returns a status, d
// keeps its state, and the process goes on.
ModelPtr TinyArenaClutter() {
  std::ifstream f(ModelPath("clutter.xml"));
  std::stringstream text;
  text << f.rdbuf();
  std::string xml = text.str();
  const std::string root = "<mujoco model=\"clutter\">";
  xml.replace(xml.find(root), root.size(), root + "<size memory=\"40K\"/>");
  std::string error;
  ModelPtr m = ModelFromXml(xml, &error);
  EXPECT_TRUE(m) << error;
  return m;
}

// Steps until the call fails; returns the message ("" if it never failed)
// and checks that d is the state from before the failed call.
std::string StepUntilFatal(const mjModel* m, mjData* d) {
  char err[1000] = "";
  mjcenicStepper* s = mjcenic_create(m, err, sizeof(err));
  EXPECT_NE(s, nullptr) << err;
  std::string message;
  for (int i = 0; i < 2000 && s; ++i) {
    const double t = d->time;
    const std::vector<double> q(d->qpos, d->qpos + m->nq);
    // The whole integration state, as MuJoCo itself reads it.
    std::vector<mjtNum> state(mj_stateSize(m, mjSTATE_INTEGRATION));
    mj_getState(m, d, state.data(), mjSTATE_INTEGRATION);
    if (mjcenic_stepper_step(s, d, err, sizeof(err))) {
      message = err;
      EXPECT_EQ(d->time, t);
      for (int j = 0; j < m->nq; ++j) EXPECT_EQ(d->qpos[j], q[j]);
      std::vector<mjtNum> after(state.size());
      mj_getState(m, d, after.data(), mjSTATE_INTEGRATION);
      for (size_t j = 0; j < state.size(); ++j) EXPECT_EQ(after[j], state[j]) << "element " << j;
      EXPECT_EQ(d->pstack, 0u);
      break;
    }
  }
  mjcenic_destroy(s);
  return message;
}

TEST(CApi, MujocoFatalErrorInAStepIsAStatus) {
  ModelPtr m = TinyArenaClutter();
  ASSERT_TRUE(m);
  mjData* d = mj_makeData(m.get());
  mj_resetDataKeyframe(m.get(), d, 0);
  const std::string e = StepUntilFatal(m.get(), d);
  EXPECT_EQ(e.rfind("MuJoCo fatal error during the mjcenic step: ", 0), 0u) << e;
  EXPECT_NE(e.find("memory"), std::string::npos) << e;
  mj_deleteData(d);
}

TEST(CApi, MujocoFatalErrorsOnTwoThreadsStayOnTheirThreads) {
  ModelPtr m = TinyArenaClutter();
  ASSERT_TRUE(m);
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k)
    threads.emplace_back([&, k] {
      mjData* d = mj_makeData(m.get());
      mj_resetDataKeyframe(m.get(), d, 0);
      errors[k] = StepUntilFatal(m.get(), d);
      mj_deleteData(d);
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) EXPECT_NE(e.find("MuJoCo fatal error"), std::string::npos);
}

TEST(CApi, StatisticsByNameMatchTheStruct) {
  std::string error;
  ModelPtr m = ModelFromXml(Sphere(), &error);
  ASSERT_TRUE(m) << error;
  char err[1000];
  mjcenicStepper* s = mjcenic_create(m.get(), err, sizeof(err));
  mjData* d = mj_makeData(m.get());
  ASSERT_EQ(mjcenic_advance_to(s, d, 0.5, err, sizeof(err)), 0) << err;
  mjcenicStats st;
  mjcenic_get_stats(s, &st);
  double x = -1;
  ASSERT_EQ(mjcenic_get_stat(s, "steps", &x), 0);
  EXPECT_EQ(x, st.steps);
  EXPECT_GT(st.steps, 0);
  ASSERT_EQ(mjcenic_get_stat(s, "h_max", &x), 0);
  EXPECT_EQ(x, st.h_max);
  ASSERT_EQ(mjcenic_get_stat(s, "controller_calls", &x), 0);
  EXPECT_EQ(x, st.controller_calls);
  EXPECT_EQ(mjcenic_get_stat(s, "no_such_stat", &x), 1);
  // The name lists end with NULL and hold every key.
  int n = 0;
  while (mjcenic_stat_name(n)) ++n;
#define MJCENIC_COUNT_STAT(name, type, doc) +1
  EXPECT_EQ(n, 0 MJCENIC_STATS(MJCENIC_COUNT_STAT));
#undef MJCENIC_COUNT_STAT
  ASSERT_EQ(mjcenic_get_stat(s, "last_error", &x), 0);
  EXPECT_EQ(x, st.last_error);
  EXPECT_GT(st.last_error, 0);  // error-controlled by default
  EXPECT_LE(st.last_error, 1e-3);
  int k = 0;
  while (mjcenic_option_name(k)) ++k;
  EXPECT_EQ(k, static_cast<int>(OptionKeys().size()));
  mj_deleteData(d);
  mjcenic_destroy(s);
}

// A MuJoCo error raised inside a user callback (mjcb_control, mjcb_passive;
// the mujoco package's Python trampolines raise that way when the Python
// callback raises) is a status like any other fatal error: d keeps its
// state, the stepper and the process go on once the callback is gone.
int g_callback_calls = 0;
int g_callback_fail_at = 0;
void FailingCallback(const mjModel*, mjData*) {
  if (++g_callback_calls == g_callback_fail_at) mju_error("callback failed at call %d", g_callback_calls);
}

TEST(CApi, MujocoErrorInsideACallbackIsAStatus) {
  std::string error;
  ModelPtr m = ModelFromXml(
      "<mujoco><worldbody><body><joint name='j' type='hinge' axis='0 1 0' damping='.1'/>"
      "<geom type='capsule' fromto='0 0 0 0 0 -1' size='.05'/></body></worldbody>"
      "<actuator><motor joint='j'/></actuator></mujoco>",
      &error);
  ASSERT_TRUE(m) << error;
  for (mjfGeneric* slot : {&mjcb_control, &mjcb_passive}) {
    for (int fail_at : {1, 2, 5}) {
      mjData* d = mj_makeData(m.get());
      d->qpos[0] = 1.0;
      char err[1000] = "";
      mjcenicStepper* s = mjcenic_create(m.get(), err, sizeof(err));
      ASSERT_NE(s, nullptr) << err;
      g_callback_calls = 0;
      g_callback_fail_at = fail_at;
      *slot = FailingCallback;
      int failed = 0;
      for (int i = 0; i < 10 && !failed; ++i) {
        const double t = d->time, q = d->qpos[0], v = d->qvel[0];
        failed = mjcenic_stepper_step(s, d, err, sizeof(err));
        if (failed) {
          EXPECT_TRUE(d->time == t && d->qpos[0] == q && d->qvel[0] == v);
        }
      }
      *slot = nullptr;
      EXPECT_TRUE(failed) << "fail_at " << fail_at;
      EXPECT_NE(std::string(err).find("callback failed at call"), std::string::npos) << err;
      EXPECT_EQ(d->pstack, 0u);
      EXPECT_EQ(mjcenic_stepper_step(s, d, err, sizeof(err)), 0) << err;  // goes on
      mjcenic_destroy(s);
      mj_deleteData(d);
    }
  }
}

}  // namespace
}  // namespace mjcenic
