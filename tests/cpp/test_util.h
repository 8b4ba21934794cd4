// Shared helpers of the C++ tests: owning pointers for MuJoCo objects.
#pragma once

#include <memory>
#include <string>

#include <mujoco/mujoco.h>

namespace mjcenic::test_util {

struct ModelDeleter {
  void operator()(mjModel* m) const { mj_deleteModel(m); }
};
struct DataDeleter {
  void operator()(mjData* d) const { mj_deleteData(d); }
};
using ModelPtr = std::unique_ptr<mjModel, ModelDeleter>;
using DataPtr = std::unique_ptr<mjData, DataDeleter>;

inline std::string ModelPath(const char* file) {
  return std::string(MJCENIC_MODELS_DIR) + "/" + file;
}

// Compiles an MJCF string; null (and *error says why: the parser's or the
// compiler's message) if it does not compile.
inline ModelPtr ModelFromXml(const std::string& xml, std::string* error) {
  char err[1000] = "";
  mjSpec* spec = mj_parseXMLString(xml.c_str(), nullptr, err, sizeof(err));
  if (!spec) {
    *error = err;
    return nullptr;
  }
  ModelPtr m(mj_compile(spec, nullptr));
  if (!m) *error = mjs_getError(spec);
  mj_deleteSpec(spec);
  return m;
}

// A scene of models/ and an mjData at its named keyframe; model is null (and
// *error says why) if the file does not load.
struct Scene {
  ModelPtr model;
  DataPtr data;
};
inline Scene LoadSceneAtKey(const char* file, const char* key, std::string* error) {
  char err[1000] = "";
  Scene s;
  s.model.reset(mj_loadXML(ModelPath(file).c_str(), nullptr, err, sizeof(err)));
  *error = err;
  if (!s.model) return s;
  s.data.reset(mj_makeData(s.model.get()));
  mj_resetDataKeyframe(s.model.get(), s.data.get(), mj_name2id(s.model.get(), mjOBJ_KEY, key));
  return s;
}

}  // namespace mjcenic::test_util
