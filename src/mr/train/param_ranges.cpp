#include "train/param_ranges.h"

#include "core/error.h"

namespace mr {

std::vector<ParamRange> trainable_ranges(const Graph& g, const std::vector<char>& trainable) {
  const auto& params = g.params();
  MR_CHECK(trainable.empty() || trainable.size() == params.size(), value,
           "trainable flags: expected one per parameter (", params.size(), "), got ",
           trainable.size());
  std::vector<ParamRange> out;
  bool open = false;  // is out.back() a run that the next trainable variable extends?
  for (size_t i = 0; i < params.size(); ++i) {
    const Graph::Param& p = params[i];
    if (!trainable.empty() && trainable[i] == 0) {
      open = false;
      continue;
    }
    // Graph lays variables out in index order, each at the aligned end of the
    // one before: extending the open run covers exactly the padding between.
    if (open) {
      out.back().size = p.offset + p.size - out.back().offset;
    } else {
      out.push_back({p.offset, p.size});
      open = true;
    }
  }
  return out;
}

int64_t range_floats(const std::vector<ParamRange>& ranges) {
  int64_t n = 0;
  for (const ParamRange& r : ranges) n += r.size;
  return n;
}

}  // namespace mr
