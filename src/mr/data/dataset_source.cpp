#include "data/dataset_source.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "data/finite_check.h"

namespace mr {

DatasetSource::DatasetSource(DatasetPtr dataset, bool continue_passes,
                             std::shared_ptr<HostAllocator> alloc)
    : dataset_(std::move(dataset)),
      continue_(continue_passes),
      staging_{StagingBuffer(alloc), StagingBuffer(alloc)} {
  MR_CHECK(dataset_ != nullptr, internal, "no dataset");
}

void DatasetSource::reset(int64_t) {
  // Pass keys come from the dataset (as tf.data's iterators do), so two fits
  // on one shuffled dataset see different orders, and a fresh dataset with the
  // same seed replays them.
  if (continue_ && it_ && !ended_) return;
  it_.reset();  // joins a prefetch thread of the previous pass first
  it_ = dataset_->iterate(dataset_->next_iteration_key());
  ended_ = false;
  batch_ = 0;
}

void DatasetSource::describe(std::string arg, std::vector<std::string> roles, int64_t used) {
  arg_ = "`" + arg + "`";
  roles_ = std::move(roles);
  used_ = used;
}

bool DatasetSource::next(HostBatch& batch) {
  if (!it_ || ended_) return false;
  if (!it_->next(element_)) {
    ended_ = true;
    return false;
  }
  const std::vector<Component>& parts = element_.parts;
  MR_CHECK(!parts.empty(), value, "the dataset's elements have no components");
  int64_t rows = -1, total = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    MR_CHECK(!parts[k].shape.empty(), shape, "component ", k + 1,
             " of the dataset's elements is a scalar: fit(), evaluate() and predict() need batches "
             "(use dataset_batch())");
    if (rows < 0) rows = parts[k].shape[0];
    MR_CHECK(parts[k].shape[0] == rows, shape, "component ", k + 1, " of a batch has ",
             parts[k].shape[0], " rows but component 1 has ", rows,
             ": the elements must be batches (use dataset_batch())");
    total += static_cast<int64_t>(parts[k].values.size());
  }
  ++batch_;
  float* dst = staging_[flip_].reserve(static_cast<size_t>(total));
  flip_ ^= 1;
  batch.rows = rows;
  batch.parts.clear();
  for (const Component& c : parts) {
    const int64_t width = rows > 0 ? static_cast<int64_t>(c.values.size()) / rows : 0;
    if (!c.values.empty()) std::memcpy(dst, c.values.data(), c.values.size() * sizeof(float));
    const size_t k = batch.parts.size();
    if (used_ < 0 || static_cast<int64_t>(k) < used_) {
      const int64_t bad = first_non_finite(dst, static_cast<int64_t>(c.values.size()));
      if (bad >= 0) {
        const std::string role = k < roles_.size()
                                     ? roles_[k] + " (component " + std::to_string(k + 1) + ")"
                                     : "component " + std::to_string(k + 1);
        fail(ErrorKind::value, arg_, " has ", non_finite_name(dst[bad]), " in ", role, " at row ",
             bad / std::max<int64_t>(width, 1) + 1, " of batch ", batch_,
             ": training and prediction need finite values; drop or replace them (e.g. in "
             "dataset_map()).");
      }
      if (k < kinds_.size() && kinds_[k] != 0) check_kind(k, dst, c.values.size(), width);
    }
    HostComponent hc{dst, width};
    const size_t rank = c.shape.size() - 1;  // without the batch dimension
    if (rank <= static_cast<size_t>(HostComponent::kMaxRank)) {
      hc.rank = static_cast<int>(rank);
      std::copy(c.shape.begin() + 1, c.shape.end(), hc.dims.begin());
    }
    batch.parts.push_back(hc);
    dst += c.values.size();
  }
  components_ = parts.size();
  return true;
}

// Component k of the batch at `p` holds the values its input's dtype takes
// (an embedding's indices, a bool mask): else an error naming the row.
void DatasetSource::check_kind(size_t k, const float* p, size_t n, int64_t width) const {
  const bool boolean = kinds_[k] == 2;
  for (size_t i = 0; i < n; ++i) {
    const float v = p[i];
    const bool ok = boolean ? (v == 0.0f || v == 1.0f)
                            : (v == std::nearbyint(v) && std::fabs(v) <= 16777216.0f);
    if (ok) continue;
    const std::string role = k < roles_.size()
                                 ? roles_[k] + " (component " + std::to_string(k + 1) + ")"
                                 : "component " + std::to_string(k + 1);
    fail(ErrorKind::value, arg_, " has ", v, " in ", role, " at row ",
         static_cast<int64_t>(i) / std::max<int64_t>(width, 1) + 1, " of batch ", batch_,
         boolean ? ": a bool input takes 0 or 1 (or logical values)"
                 : ": an integer input takes whole numbers of magnitude at most 2^24");
  }
}

bool DatasetSource::sharded() const { return dataset_->sharded(); }

int64_t DatasetSource::batches() const {
  const int64_t n = job_batches_.value_or(dataset_->cardinality());
  return n >= 0 ? n : -1;
}

}  // namespace mr
