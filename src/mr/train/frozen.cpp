#include "train/frozen.h"

#include <algorithm>

#include "core/error.h"

namespace mr {

void resolve_frozen(const Graph& g, CompileConfig& c) {
  const size_t nodes = static_cast<size_t>(g.size());
  MR_CHECK(c.frozen.empty() || c.frozen.size() == nodes, value,
           "compile(): expected one frozen flag per layer node (", nodes, "), got ",
           c.frozen.size());
  MR_CHECK(c.trainable.empty() || c.trainable.size() == g.params().size(), value,
           "compile(): expected one trainable flag per variable (", g.params().size(), "), got ",
           c.trainable.size());
  // Later calls of a shared layer take their owner's flag.
  for (size_t i = 0; i < c.frozen.size(); ++i)
    c.frozen[i] = c.frozen[static_cast<size_t>(g.owner(static_cast<int>(i)))] != 0 ? 1 : 0;
  if (std::none_of(c.frozen.begin(), c.frozen.end(), [](char f) { return f != 0; })) {
    c.frozen.clear();
    return;
  }
  if (!c.trainable.empty()) return;
  c.trainable.assign(g.params().size(), 1);
  for (const Graph::Param& p : g.params())
    if (c.frozen[static_cast<size_t>(g.owner(p.node))] != 0)
      c.trainable[static_cast<size_t>(&p - g.params().data())] = 0;
}

}  // namespace mr
