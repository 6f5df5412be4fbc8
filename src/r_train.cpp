// Glue for the training loops: in-memory array data, and the hooks through
// which the core's loop calls back into R (on R's thread, between steps only).
#include <R_ext/Utils.h>
#include <Rcpp.h>

#include <chrono>
#include <memory>

#include "data/array_source.h"
#include "r_glue.h"
#include "train/loop.h"

using mr_glue::guarded;

namespace {

// What fit()/evaluate()/predict() consume: any batch source (in-memory
// arrays here; datasets make their own).
using SourcePtr = Rcpp::XPtr<std::shared_ptr<mr::BatchSource>>;

void check_interrupt_fn(void*) { R_CheckUserInterrupt(); }

// Output k's rows (n floats, row-major) as an R array: samples x the
// output's per-sample dims (a matrix for rank-1 outputs).
SEXP output_array(const mr::Model& m, int k, const float* data, size_t n) {
  const int64_t width = m.output_width(k);
  const int64_t rows = width > 0 ? static_cast<int64_t>(n) / width : 0;
  std::vector<int64_t> shape{rows};
  // The last batch's graph: a variable-length model's outputs follow its lengths.
  const mr::Shape out = m.output_shape(k);
  for (int64_t d : out.dims()) shape.push_back(d);
  if (shape.size() == 1) shape.push_back(1);
  return mr_glue::from_row_major(data, shape);
}

// Calls R back for batch callbacks and progress. Interrupts are polled at
// most every 20 ms: R_ToplevelExec returns FALSE when a pending interrupt
// made R jump, which we turn into a clean stop at the step boundary.
class RHooks final : public mr::LoopHooks {
 public:
  RHooks(SEXP batch_begin, SEXP batch_end, SEXP progress, double interval,
         Rcpp::CharacterVector names)
      : batch_begin_(batch_begin),
        batch_end_(batch_end),
        progress_(progress),
        interval_(interval),
        names_(names),
        last_poll_(std::chrono::steady_clock::now()) {}

  bool batch_events() const override { return !Rf_isNull(batch_begin_) || !Rf_isNull(batch_end_); }
  void on_batch_begin(int64_t batch) override {
    if (Rf_isNull(batch_begin_)) return;
    Rcpp::Function fn(batch_begin_);
    fn(static_cast<double>(batch));
  }
  void on_batch_end(int64_t batch, const std::vector<double>& logs) override {
    if (Rf_isNull(batch_end_)) return;
    Rcpp::Function fn(batch_end_);
    note_stop(fn(static_cast<double>(batch), named(logs)));
  }
  double progress_interval() const override { return Rf_isNull(progress_) ? 0.0 : interval_; }
  void on_progress(int64_t done, const std::vector<double>& logs) override {
    Rcpp::Function fn(progress_);
    note_stop(fn(static_cast<double>(done), named(logs)));
  }
  bool stop_requested() const override { return stop_; }
  bool interrupted() override {
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_poll_).count() < 0.02) return false;
    last_poll_ = now;
    return R_ToplevelExec(check_interrupt_fn, nullptr) == FALSE;
  }

 private:
  // The R hooks return TRUE when the model's stop_training was set.
  void note_stop(SEXP r) {
    stop_ = stop_ || (Rf_isLogical(r) && Rf_xlength(r) == 1 && LOGICAL(r)[0] == TRUE);
  }
  Rcpp::NumericVector named(const std::vector<double>& logs) const {
    Rcpp::NumericVector v(logs.begin(), logs.end());
    if (static_cast<R_xlen_t>(logs.size()) == names_.size()) v.attr("names") = names_;
    return v;
  }
  SEXP batch_begin_, batch_end_, progress_;
  double interval_;
  Rcpp::CharacterVector names_;
  std::chrono::steady_clock::time_point last_poll_;
  bool stop_ = false;
};

// predict()'s hooks: progress and interrupts as RHooks, and keras3's
// on_predict_batch_begin/end, whose end logs hold the batch's outputs
// (`outputs`: one array, or a list of them for a model of several outputs).
class PredictHooks final : public mr::LoopHooks {
 public:
  PredictHooks(const mr::Model& m, SEXP batch_begin, SEXP batch_end, SEXP progress, double interval,
               const std::vector<std::vector<float>>& outs)
      : model_(m),
        base_(R_NilValue, R_NilValue, progress, interval, Rcpp::CharacterVector()),
        batch_begin_(batch_begin),
        batch_end_(batch_end),
        outs_(outs) {}

  bool batch_events() const override { return !Rf_isNull(batch_begin_) || !Rf_isNull(batch_end_); }
  void on_batch_begin(int64_t batch) override {
    if (Rf_isNull(batch_begin_)) return;
    Rcpp::Function fn(batch_begin_);
    fn(static_cast<double>(batch));
  }
  void on_batch_end(int64_t batch, const std::vector<double>&) override {
    if (Rf_isNull(batch_end_)) return;
    seen_.resize(static_cast<size_t>(model_.outputs()), 0);
    Rcpp::List arrays(model_.outputs());
    for (int k = 0; k < model_.outputs(); ++k) {
      const std::vector<float>& out = outs_[static_cast<size_t>(k)];
      const size_t seen = seen_[static_cast<size_t>(k)];
      arrays[k] = output_array(model_, k, out.data() + seen, out.size() - seen);
      seen_[static_cast<size_t>(k)] = out.size();
    }
    Rcpp::Function fn(batch_end_);
    fn(static_cast<double>(batch), arrays);
  }
  double progress_interval() const override { return base_.progress_interval(); }
  void on_progress(int64_t done, const std::vector<double>& logs) override {
    base_.on_progress(done, logs);
  }
  bool interrupted() override { return base_.interrupted(); }

 private:
  const mr::Model& model_;
  RHooks base_;
  SEXP batch_begin_, batch_end_;
  const std::vector<std::vector<float>>& outs_;
  std::vector<size_t> seen_;  // rows x width of each output already reported
};

Rcpp::List result_list(const mr::LoopResult& r, const std::vector<std::string>& names) {
  Rcpp::NumericVector logs(r.logs.begin(), r.logs.end());
  if (logs.size() == static_cast<R_xlen_t>(names.size())) logs.attr("names") = Rcpp::wrap(names);
  return Rcpp::List::create(Rcpp::Named("logs") = logs,
                            Rcpp::Named("batches") = static_cast<double>(r.batches),
                            Rcpp::Named("interrupted") = r.interrupted);
}

mr::BatchSource& source_of(SEXP source) {
  SourcePtr p(source);
  MR_CHECK(*p != nullptr, internal, "empty batch source");
  return **p;
}

}  // namespace

// Converts R arrays (samples along the first dimension) once into row-major
// float32 held by the core, batched (and shuffled each epoch when asked:
// shuffle "none", "rows" or "batch", Keras' shuffle = "batch").
// [[Rcpp::export]]
SEXP cpp_array_source(Rcpp::List parts, Rcpp::CharacterVector what, double batch_size,
                      std::string shuffle, double seed) {
  return guarded([&]() -> SEXP {
    auto data = std::make_shared<mr::ArrayData>();
    for (R_xlen_t k = 0; k < parts.size(); ++k) {
      SEXP x = parts[k];
      const std::vector<int64_t> dims = mr_glue::r_dims(x);
      const std::string name = Rcpp::as<std::string>(what[k]);
      const int64_t rows = dims[0];
      if (k == 0) data->rows = rows;
      MR_CHECK(rows == data->rows, value, "`", name, "` has ", rows, " samples but `",
               Rcpp::as<std::string>(what[0]), "` has ", data->rows);
      data->widths.push_back(rows == 0 ? 0 : static_cast<int64_t>(Rf_xlength(x)) / rows);
      data->parts.push_back(mr_glue::to_row_major(x, name));
    }
    auto source =
        std::make_unique<std::shared_ptr<mr::BatchSource>>(std::make_shared<mr::ArraySource>(
            std::move(data), static_cast<int64_t>(batch_size), shuffle != "none",
            static_cast<uint64_t>(seed), shuffle == "batch"));
    return SourcePtr(source.release(), true);
  });
}

// [[Rcpp::export]]
Rcpp::List cpp_fit_epoch(SEXP model, SEXP source, double epoch, double max_batches,
                         SEXP batch_begin, SEXP batch_end, SEXP progress,
                         double progress_interval) {
  return guarded([&] {
    Rcpp::XPtr<mr::Model> m(model);
    const auto names = m->metric_names();
    RHooks hooks(batch_begin, batch_end, progress, progress_interval, Rcpp::wrap(names));
    const mr::LoopResult r = mr::train_epoch(*m, source_of(source), static_cast<int64_t>(epoch),
                                             static_cast<int64_t>(max_batches), hooks);
    return result_list(r, names);
  });
}

// [[Rcpp::export]]
Rcpp::List cpp_evaluate(SEXP model, SEXP source, double max_batches, SEXP batch_begin,
                        SEXP batch_end, SEXP progress, double progress_interval) {
  return guarded([&] {
    Rcpp::XPtr<mr::Model> m(model);
    const auto names = m->metric_names();
    RHooks hooks(batch_begin, batch_end, progress, progress_interval, Rcpp::wrap(names));
    return result_list(
        mr::evaluate(*m, source_of(source), static_cast<int64_t>(max_batches), hooks), names);
  });
}

// Predictions as a list of R arrays, one per model output (samples x
// outputs; rank > 1 outputs keep their per-sample dims), or NULL after an
// interrupt.
// [[Rcpp::export]]
SEXP cpp_predict(SEXP model, SEXP source, double max_batches, SEXP batch_begin, SEXP batch_end,
                 SEXP progress, double progress_interval) {
  return guarded([&]() -> SEXP {
    Rcpp::XPtr<mr::Model> m(model);
    std::vector<std::vector<float>> outs;
    PredictHooks hooks(*m, batch_begin, batch_end, progress, progress_interval, outs);
    const mr::LoopResult r =
        mr::predict(*m, source_of(source), static_cast<int64_t>(max_batches), hooks, outs);
    if (r.interrupted) return R_NilValue;
    Rcpp::List res(m->outputs());
    for (int k = 0; k < m->outputs(); ++k) {
      const std::vector<float>& out = outs[static_cast<size_t>(k)];
      res[k] = output_array(*m, k, out.data(), out.size());
    }
    return res;
  });
}
