// Frozen layers at compile(): from the per-node flags the R side sends
// (Keras' layer.trainable, as it stood when compile() was called) to the
// per-variable flags the post-backward pipeline reads.
#pragma once

#include <vector>

#include "nn/graph.h"
#include "train/step.h"

namespace mr {

// Checks c.frozen (empty, or one flag per node) and c.trainable (empty, or
// one flag per Graph::params() index). When c.trainable is empty and some
// node is frozen, fills c.trainable: a variable trains unless the node owning
// it is frozen. A shared layer's later calls follow its owner's flag, so a
// layer has one flag whichever call a node is. No node frozen leaves both
// empty (everything trains, the pipeline's fast path).
void resolve_frozen(const Graph& g, CompileConfig& c);

}  // namespace mr
