// Placeholder until the JSON library change lands: mr::Json is nlohmann's
// ordered_json (Keras' files keep key order).
#pragma once

#include <nlohmann/json.hpp>

namespace mr {
using Json = nlohmann::ordered_json;
}  // namespace mr
