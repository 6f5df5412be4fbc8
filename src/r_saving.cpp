// Glue for persistence: JSON text (parse and serialize; the R <-> JSON
// conversion is r_json.cpp's), atomic file writes, zip archives
// and the Keras weights layout (src/mr/io/), and a batch source that skips
// the batches a resumed epoch has already trained on.
#include <Rcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "io/file_util.h"
#include "io/keras_weights.h"
#include "io/zip_archive.h"
#include "r_glue.h"
#include "train/model.h"
#include "train/model_weights.h"

using mr_glue::guarded;
using mr_glue::json_from_r;
using mr_glue::json_to_r;

namespace {

mr::Bytes raw_bytes(const Rcpp::RawVector& r) { return mr::Bytes(r.begin(), r.end()); }

Rcpp::RawVector to_raw(const mr::Bytes& b) {
  Rcpp::RawVector out(b.size());
  std::copy(b.begin(), b.end(), out.begin());
  return out;
}

mr::KerasWeightsLayout to_layout(const Rcpp::List& l) {
  mr::KerasWeightsLayout out;
  out.model_name = Rcpp::as<std::string>(l["model_name"]);
  out.optimizer_name = Rcpp::as<std::string>(l["optimizer_name"]);
  out.optimizer = Rcpp::as<bool>(l["optimizer"]);
  if (l.containsElementNamed("inner_optimizer_name"))  // i14-mpapi: a LossScaleOptimizer's
    out.inner_optimizer_name = Rcpp::as<std::string>(l["inner_optimizer_name"]);
  const Rcpp::CharacterVector groups = l["groups"];
  const Rcpp::CharacterVector names = l["names"];
  const Rcpp::IntegerVector nodes = l["nodes"];
  for (R_xlen_t i = 0; i < groups.size(); ++i)
    out.layers.push_back(
        {Rcpp::as<std::string>(groups[i]), Rcpp::as<std::string>(names[i]), nodes[i]});
  return out;
}

// Skips the first `skip` batches of the pass for epoch `epoch` (once), so a
// resumed epoch trains on exactly the batches the interrupted run had left.
class SkipSource final : public mr::BatchSource {
 public:
  SkipSource(std::shared_ptr<mr::BatchSource> inner, int64_t epoch, int64_t skip)
      : inner_(std::move(inner)), epoch_(epoch), skip_(skip) {}
  void reset(int64_t epoch) override {
    inner_->reset(epoch);
    if (epoch != epoch_ || done_) return;
    done_ = true;
    mr::HostBatch b;
    for (int64_t k = 0; k < skip_ && inner_->next(b); ++k) {
    }
  }
  bool next(mr::HostBatch& batch) override { return inner_->next(batch); }
  int64_t batches() const override { return inner_->batches(); }
  bool sharded() const override { return inner_->sharded(); }

 private:
  std::shared_ptr<mr::BatchSource> inner_;
  int64_t epoch_, skip_;
  bool done_ = false;
};

}  // namespace

// [[Rcpp::export]]
SEXP cpp_json_parse(std::string text, std::string what) {
  return guarded([&]() -> SEXP { return json_to_r(mr::parse_json(text, what)); });
}

// [[Rcpp::export]]
std::string cpp_json_serialize(SEXP x) {
  return guarded([&] { return mr::to_json(json_from_r(x)); });
}

// [[Rcpp::export]]
void cpp_write_file_atomic(std::string path, Rcpp::RawVector bytes, int chunk_delay_ms) {
  guarded([&] {
    mr::write_file_atomic(path, reinterpret_cast<const uint8_t*>(RAW(bytes)),
                          static_cast<size_t>(bytes.size()), chunk_delay_ms);
  });
}

// [[Rcpp::export]]
Rcpp::RawVector cpp_read_file(std::string path, double max_bytes) {
  return guarded([&] { return to_raw(mr::read_file(path, static_cast<uint64_t>(max_bytes))); });
}

// [[Rcpp::export]]
bool cpp_is_temp_name(std::string name) { return mr::is_temp_name(name); }

// Members in order; `times` 0 gives the zip epoch (1980-01-01).
// [[Rcpp::export]]
Rcpp::RawVector cpp_zip_write(Rcpp::CharacterVector names, Rcpp::List data,
                              Rcpp::NumericVector times, std::string what) {
  return guarded([&] {
    std::vector<mr::ZipMember> members;
    for (R_xlen_t i = 0; i < names.size(); ++i) {
      mr::ZipMember m;
      m.name = Rcpp::as<std::string>(names[i]);
      m.data = raw_bytes(Rcpp::RawVector(data[i]));
      m.mtime = static_cast<std::time_t>(times[i]);
      members.push_back(std::move(m));
    }
    return to_raw(mr::zip_write(members, what));
  });
}

// The archive's member names.
// [[Rcpp::export]]
Rcpp::CharacterVector cpp_zip_names(Rcpp::RawVector archive, std::string what) {
  return guarded([&] {
    mr::ZipReader r(std::make_shared<const mr::Bytes>(raw_bytes(archive)), what);
    return Rcpp::wrap(r.names());
  });
}

// The named members (all must exist) as raw vectors.
// [[Rcpp::export]]
Rcpp::List cpp_zip_read(Rcpp::RawVector archive, std::string what, Rcpp::CharacterVector members) {
  return guarded([&] {
    mr::ZipReader r(std::make_shared<const mr::Bytes>(raw_bytes(archive)), what);
    Rcpp::List out(members.size());
    for (R_xlen_t i = 0; i < members.size(); ++i)
      out[i] = to_raw(r.read(Rcpp::as<std::string>(members[i])));
    out.attr("names") = members;
    return out;
  });
}

// [[Rcpp::export]]
Rcpp::RawVector cpp_weights_write(SEXP model, Rcpp::List layout, Rcpp::CharacterVector attr_names,
                                  Rcpp::CharacterVector attr_values, std::string what) {
  return guarded([&] {
    Rcpp::XPtr<mr::Model> m(model);
    std::vector<std::pair<std::string, std::string>> attrs;
    for (R_xlen_t i = 0; i < attr_names.size(); ++i)
      attrs.emplace_back(Rcpp::as<std::string>(attr_names[i]),
                         Rcpp::as<std::string>(attr_values[i]));
    return to_raw(mr::write_keras_weights(*m, to_layout(layout), attrs, what));
  });
}

// [[Rcpp::export]]
Rcpp::List cpp_weights_read(SEXP model, Rcpp::List layout, Rcpp::RawVector image, std::string what,
                            bool load_optimizer) {
  return guarded([&] {
    Rcpp::XPtr<mr::Model> m(model);
    const mr::KerasWeightsResult r =
        mr::read_keras_weights(*m, to_layout(layout), raw_bytes(image), what, load_optimizer);
    return Rcpp::List::create(Rcpp::Named("optimizer") = r.optimizer,
                              Rcpp::Named("iterations") = static_cast<double>(r.iterations),
                              Rcpp::Named("learning_rate") = r.learning_rate);
  });
}

// A string attribute of the weights file's root, or NULL.
// [[Rcpp::export]]
SEXP cpp_weights_root_attr(Rcpp::RawVector image, std::string what, std::string name) {
  return guarded([&]() -> SEXP {
    bool found = false;
    const std::string v = mr::read_keras_root_attr(raw_bytes(image), what, name, &found);
    return found ? Rcpp::wrap(v) : R_NilValue;
  });
}

// A source that skips `skip` batches of epoch `epoch` (0-based) once.
// [[Rcpp::export]]
SEXP cpp_skip_source(SEXP source, double epoch, double skip) {
  return guarded([&]() -> SEXP {
    Rcpp::XPtr<std::shared_ptr<mr::BatchSource>> inner(source);
    auto out = std::make_unique<std::shared_ptr<mr::BatchSource>>(std::make_shared<SkipSource>(
        *inner, static_cast<int64_t>(epoch), static_cast<int64_t>(skip)));
    return Rcpp::XPtr<std::shared_ptr<mr::BatchSource>>(out.release(), true);
  });
}
