// Keras 3's class_weight as a BatchSource: every batch of an inner source
// gets one more component, the per-sample weights of its targets' classes,
// computed on the host as the batch is assembled (Keras 3 does the same in
// its data adapters, data_adapter_utils.class_weight_to_sample_weights).
// The class of a sample: its target rounded (half to even, as np.round)
// when the targets have one value per sample, else the argmax of its target
// row (one-hot or probabilities; the first maximum on ties). Classes without
// an entry in the table weigh 1.
//
// Only a model of one output takes class_weight, and its batches must not
// carry sample weights already (Keras 3 raises on both).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/batch.h"

namespace mr {

// weights[c]: the weight of class c (classes beyond the table weigh 1).
// `parts`: components of the inner batches (the inputs and the targets,
// which come last). `arg` names the data in errors ("x").
class ClassWeightSource final : public BatchSource {
 public:
  ClassWeightSource(std::shared_ptr<BatchSource> inner, size_t parts, std::vector<float> weights,
                    std::string arg);
  void reset(int64_t epoch) override { inner_->reset(epoch); }
  bool next(HostBatch& batch) override;
  int64_t batches() const override { return inner_->batches(); }
  bool sharded() const override { return inner_->sharded(); }

 private:
  std::shared_ptr<BatchSource> inner_;
  size_t parts_;
  std::vector<float> weights_;
  std::string arg_;
  std::vector<float> staging_[2];  // alternating, see HostBatch's validity rule
  int flip_ = 0;
};

// The class of a target row of `width` values (see above).
int64_t target_class(const float* row, int64_t width);

}  // namespace mr
