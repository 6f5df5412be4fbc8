#include "nn/dtype_policy.h"

#include "core/error.h"

namespace mr {

DTypePolicy parse_dtype_policy(const Json& d, const std::string& who) {
  std::string name;
  if (d.is_null()) {
    name = "float32";
  } else if (d.is_string()) {
    name = d.get<std::string>();
  } else if (d.is_object() && d.contains("class_name") && d["class_name"] == "DTypePolicy" &&
             d.contains("config") && d["config"].is_object() && d["config"].contains("name") &&
             d["config"]["name"].is_string()) {
    name = d["config"]["name"].get<std::string>();
  } else {
    fail(ErrorKind::value, who,
         ": dtype must be a dtype policy name or a Keras DTypePolicy "
         "config, got ",
         d.dump());
  }
  DTypePolicy p;
  p.name = name;
  if (name == "float32") {
    p.compute = ComputeDtype::f32;
  } else if (name == "mixed_bfloat16") {
    p.compute = ComputeDtype::bf16;
  } else if (name == "mixed_float16") {
    p.compute = ComputeDtype::f16;
  } else {
    fail(ErrorKind::value, who, ": dtype policy '", name,
         "' is not supported (expected \"float32\", \"mixed_bfloat16\" or \"mixed_float16\"; "
         "mirrored keeps variables in float32)");
  }
  return p;
}

Json dtype_policy_json(const DTypePolicy& p) {
  return Json{{"module", "keras"},
              {"class_name", "DTypePolicy"},
              {"config", {{"name", p.name}}},
              {"registered_name", nullptr}};
}

const char* compute_dtype_name(ComputeDtype d) {
  switch (d) {
    case ComputeDtype::bf16:
      return "bfloat16";
    case ComputeDtype::f16:
      return "float16";
    default:
      return "float32";
  }
}

}  // namespace mr
