#include "data/map.h"

#include "core/error.h"
#include "data/prefetch.h"

namespace mr {

namespace {

class MapIterator final : public Iterator {
 public:
  MapIterator(std::unique_ptr<Iterator> in, std::shared_ptr<ElementFunction> fn)
      : in_(std::move(in)), fn_(std::move(fn)) {}
  bool next(Element& out) override {
    if (!in_->next(out)) return false;
    fn_->apply(out);
    return true;
  }

 private:
  std::unique_ptr<Iterator> in_;
  std::shared_ptr<ElementFunction> fn_;
};

class MapDataset final : public Dataset {
 public:
  MapDataset(DatasetPtr in, std::shared_ptr<ElementFunction> fn)
      : input_(std::move(in)), fn_(std::move(fn)) {
    MR_CHECK(input_ != nullptr && fn_ != nullptr, internal, "map needs an input and a function");
  }
  DatasetPtr input() const override { return input_; }
  ElementSpec spec() const override { return fn_->spec(input_->spec()); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string label() const override { return fn_->label(); }
  bool needs_caller_thread() const override {
    return fn_->needs_caller_thread() || input_->needs_caller_thread();
  }
  void fingerprint(Hasher& h) const override {
    fn_->fingerprint(h);
    input_->fingerprint(h);
  }
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<MapDataset>(std::move(in), fn_);
  }
  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    std::unique_ptr<Iterator> in = input_->iterate(key);
    // The caller's thread will spend its time in the function: let the pure
    // C++ stages before it work meanwhile.
    if (fn_->needs_caller_thread() && !input_->needs_caller_thread())
      in = std::make_unique<PrefetchIterator>(std::move(in), kMapLookahead);
    return std::make_unique<MapIterator>(std::move(in), fn_);
  }

 private:
  DatasetPtr input_;
  std::shared_ptr<ElementFunction> fn_;
};

}  // namespace

DatasetPtr make_map(DatasetPtr input, std::shared_ptr<ElementFunction> fn) {
  return std::make_shared<MapDataset>(std::move(input), std::move(fn));
}

}  // namespace mr
