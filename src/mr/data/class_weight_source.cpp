#include "data/class_weight_source.h"

#include <cmath>

#include "core/error.h"

namespace mr {

int64_t target_class(const float* row, int64_t width) {
  if (width == 1) return static_cast<int64_t>(std::nearbyint(row[0]));  // ties to even
  int64_t best = 0;
  for (int64_t j = 1; j < width; ++j)
    if (row[j] > row[best]) best = j;
  return best;
}

ClassWeightSource::ClassWeightSource(std::shared_ptr<BatchSource> inner, size_t parts,
                                     std::vector<float> weights, std::string arg)
    : inner_(std::move(inner)), parts_(parts), weights_(std::move(weights)), arg_(std::move(arg)) {
  MR_CHECK(inner_ != nullptr, internal, "no batch source");
  MR_CHECK(parts_ >= 2, internal, "class weights need inputs and targets");
  for (float w : weights_)
    MR_CHECK(std::isfinite(w), value, "class_weight must hold finite weights, got ", w);
}

bool ClassWeightSource::next(HostBatch& batch) {
  if (!inner_->next(batch)) return false;
  MR_CHECK(batch.parts.size() == parts_, value,
           "`class_weight` and sample weights can not be used "
           "at the same time: the elements of `",
           arg_, "` have ", batch.parts.size(),
           " components (inputs, targets and sample weights); give class_weight = NULL or drop "
           "the sample weights");
  const HostComponent& y = batch.parts.back();
  MR_CHECK(y.width >= 1, value, "class_weight needs targets, but the targets of `", arg_,
           "` are empty");
  std::vector<float>& w = staging_[flip_];
  flip_ ^= 1;
  if (static_cast<int64_t>(w.size()) < batch.rows) w.resize(static_cast<size_t>(batch.rows));
  const auto n = static_cast<int64_t>(weights_.size());
  for (int64_t r = 0; r < batch.rows; ++r) {
    const int64_t c = target_class(y.data + r * y.width, y.width);
    w[static_cast<size_t>(r)] = c >= 0 && c < n ? weights_[static_cast<size_t>(c)] : 1.0f;
  }
  HostComponent hc{w.data(), 1};
  hc.rank = 0;
  batch.parts.push_back(hc);
  return true;
}

}  // namespace mr
