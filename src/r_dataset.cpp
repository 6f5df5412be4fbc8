// Glue for datasets: R arrays to sources (converted once to row-major), the
// transforms, R map functions, iterators back to R arrays, and the
// BatchSource that fit()/evaluate()/predict() consume.
//
// Threads: R objects (the map function, SEXPs) live only in RMapFunction,
// which declares needs_caller_thread(); the core then never calls it, nor
// destroys it, off R's thread (see data/map.h and data/prefetch.h).
#include <Rcpp.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "data/builtin_transforms.h"
#include "data/cache.h"
#include "data/combine.h"
#include "data/dataset_source.h"
#include "data/file_parts.h"
#include "data/file_sources.h"
#include "data/map.h"
#include "data/prefetch.h"
#include "data/sources.h"
#include "data/transforms.h"
#include "data/windows.h"
#include "dist/worker_data.h"
#include "r_glue.h"
#include "train/model.h"

using mr_glue::guarded;

namespace {

using DatasetXPtr = Rcpp::XPtr<mr::DatasetPtr>;

struct IteratorState {
  mr::DatasetPtr dataset;  // keeps the definition (and its R map functions) alive
  std::unique_ptr<mr::Iterator> it;
};
using IteratorXPtr = Rcpp::XPtr<IteratorState>;

mr::DatasetPtr get(SEXP ds) {
  DatasetXPtr p(ds);
  MR_CHECK(p.get() != nullptr && *p != nullptr, internal, "the dataset handle is empty");
  return *p;
}

SEXP wrap(mr::DatasetPtr ds) { return DatasetXPtr(new mr::DatasetPtr(std::move(ds)), true); }

mr::RType rtype_of(SEXP x) {
  switch (TYPEOF(x)) {
    case INTSXP:
      return mr::RType::integer;
    case LGLSXP:
      return mr::RType::logical;
    default:
      return mr::RType::dbl;
  }
}

// One R array to a column. slices: the first dimension indexes elements;
// otherwise the whole array is one element. Integers that all lie in 0..255
// are stored as bytes; no double copy of them is ever made.
mr::Column to_column(SEXP x, bool slices, int64_t& rows, const std::string& what) {
  const int type = TYPEOF(x);
  if (type != REALSXP && type != INTSXP && type != LGLSXP)
    mr::fail(mr::ErrorKind::value, "`", what, "` must be a numeric, integer or logical array, not ",
             Rf_type2char(static_cast<SEXPTYPE>(type)));
  const bool has_dim = !Rf_isNull(Rf_getAttrib(x, R_DimSymbol));
  std::vector<int64_t> dims = mr_glue::r_dims(x);
  mr::Column c;
  c.rtype = rtype_of(x);
  if (slices) {
    rows = dims[0];
    c.shape.assign(dims.begin() + 1, dims.end());
  } else {
    rows = 1;
    if (has_dim || Rf_xlength(x) != 1) c.shape = dims;  // a length-1 vector is a scalar
  }
  const R_xlen_t n = Rf_xlength(x);
  if (type == INTSXP || type == LGLSXP) {
    const int* v = type == INTSXP ? INTEGER(x) : LOGICAL(x);
    bool bytes = true;
    for (R_xlen_t i = 0; i < n; ++i) {
      if (v[i] == NA_INTEGER)
        mr::fail(mr::ErrorKind::value, "`", what, "` must not contain NA (found at position ",
                 i + 1, ")");
      if (v[i] < 0 || v[i] > 255) bytes = false;
    }
    if (bytes) {
      c.u8.resize(static_cast<size_t>(n));
      mr_glue::row_major_walk(
          dims, [&](int64_t rm, int64_t cm) { c.u8[rm] = static_cast<uint8_t>(v[cm]); });
    } else {
      c.f32.resize(static_cast<size_t>(n));
      mr_glue::row_major_walk(
          dims, [&](int64_t rm, int64_t cm) { c.f32[rm] = static_cast<float>(v[cm]); });
    }
  } else {
    const double* v = REAL(x);
    c.f32.resize(static_cast<size_t>(n));
    mr_glue::row_major_walk(dims,
                            [&](int64_t rm, int64_t cm) { c.f32[rm] = static_cast<float>(v[cm]); });
  }
  return c;
}

mr::Names names_of(SEXP list) {
  SEXP nm = Rf_getAttrib(list, R_NamesSymbol);
  if (Rf_isNull(nm)) return nullptr;
  auto v = std::make_shared<std::vector<std::string>>();
  for (R_xlen_t i = 0; i < Rf_xlength(nm); ++i) v->push_back(CHAR(STRING_ELT(nm, i)));
  return v;
}

// A component as an R value: double/integer/logical, dims as its shape
// (a scalar or 1-d component gives a plain vector).
SEXP component_to_r(const mr::Component& c) {
  const int64_t n = mr::numel(c.shape);
  SEXP out;
  if (c.rtype == mr::RType::dbl) {
    out = PROTECT(Rf_allocVector(REALSXP, static_cast<R_xlen_t>(n)));
    double* o = REAL(out);
    mr_glue::row_major_walk(
        c.shape.empty() ? std::vector<int64_t>{1} : c.shape,
        [&](int64_t rm, int64_t cm) { o[cm] = c.values[static_cast<size_t>(rm)]; });
  } else {
    out = PROTECT(
        Rf_allocVector(c.rtype == mr::RType::integer ? INTSXP : LGLSXP, static_cast<R_xlen_t>(n)));
    int* o = c.rtype == mr::RType::integer ? INTEGER(out) : LOGICAL(out);
    mr_glue::row_major_walk(c.shape.empty() ? std::vector<int64_t>{1} : c.shape,
                            [&](int64_t rm, int64_t cm) {
                              o[cm] = static_cast<int>(c.values[static_cast<size_t>(rm)]);
                            });
  }
  if (c.shape.size() >= 2) {
    SEXP dim = PROTECT(Rf_allocVector(INTSXP, static_cast<R_xlen_t>(c.shape.size())));
    for (size_t k = 0; k < c.shape.size(); ++k) INTEGER(dim)[k] = static_cast<int>(c.shape[k]);
    Rf_setAttrib(out, R_DimSymbol, dim);
    UNPROTECT(1);
  }
  UNPROTECT(1);
  return out;
}

Rcpp::List element_to_r(const mr::Element& e) {
  Rcpp::List out(e.parts.size());
  for (size_t k = 0; k < e.parts.size(); ++k)
    out[static_cast<R_xlen_t>(k)] = component_to_r(e.parts[k]);
  if (e.names) out.attr("names") = Rcpp::wrap(*e.names);
  return out;
}

// An R value returned by a map function back to an element component.
mr::Component component_from_r(SEXP x, const std::string& what) {
  int64_t rows = 0;
  mr::Column col = to_column(x, false, rows, what);
  mr::Component c;
  c.shape = col.shape;
  c.rtype = col.rtype;
  c.values.resize(static_cast<size_t>(col.width()));
  col.copy_row(0, c.values.data());
  return c;
}

// An R function called on an element, on R's thread, as dataset_map(),
// dataset_filter() and dataset_flat_map() call theirs: tuple elements are
// spread as separate arguments, a named element (a dict in tfdatasets) is
// passed as one named list.
Rcpp::RObject call_on_element(Rcpp::Function& fn, const mr::Element& e) {
  Rcpp::List args = element_to_r(e);
  if (e.names) return fn(args);
  Rcpp::Function do_call("do.call");
  return do_call(fn, args);
}

// dataset_map()'s R function: it returns an array or a list of arrays.
class RMapFunction final : public mr::ElementFunction {
 public:
  RMapFunction(Rcpp::Function fn, std::string label) : fn_(fn), label_(std::move(label)) {}
  void apply(mr::Element& e) override {
    Rcpp::RObject keep = call_on_element(fn_, e);
    SEXP res = keep;
    mr::Element out;
    if (TYPEOF(res) == VECSXP) {
      out.names = names_of(res);
      for (R_xlen_t k = 0; k < Rf_xlength(res); ++k)
        out.parts.push_back(component_from_r(
            VECTOR_ELT(res, k), "the result of map_func, component " + std::to_string(k + 1)));
    } else {
      out.parts.push_back(component_from_r(res, "the result of map_func"));
    }
    e = std::move(out);
  }
  mr::ElementSpec spec(const mr::ElementSpec&) const override { return {false, {}, nullptr}; }
  std::string label() const override { return label_; }
  bool needs_caller_thread() const override { return true; }

 private:
  Rcpp::Function fn_;
  std::string label_;
};

// dataset_filter()'s R predicate: called like a map function, it returns
// TRUE or FALSE (checked in R, which names the user's call).
class RPredicate final : public mr::ElementPredicate {
 public:
  RPredicate(Rcpp::Function fn, std::string label) : fn_(fn), label_(std::move(label)) {}
  bool keep(const mr::Element& e) override { return Rf_asLogical(call_on_element(fn_, e)) == TRUE; }
  std::string label() const override { return label_; }
  bool needs_caller_thread() const override { return true; }

 private:
  Rcpp::Function fn_;
  std::string label_;
};

// dataset_flat_map()'s and dataset_interleave()'s R function: called like a
// map function, it returns a dataset's external pointer (the R wrapper
// checks that the user's function returned a dataset).
class RDatasetFunction final : public mr::DatasetFunction {
 public:
  RDatasetFunction(Rcpp::Function fn, std::string label) : fn_(fn), label_(std::move(label)) {}
  mr::DatasetPtr apply(const mr::Element& e) override { return get(call_on_element(fn_, e)); }
  std::string label() const override { return label_; }
  bool needs_caller_thread() const override { return true; }

 private:
  Rcpp::Function fn_;
  std::string label_;
};

std::vector<int> components_arg(Rcpp::IntegerVector comps) {
  std::vector<int> v;
  for (int c : comps) v.push_back(c - 1);
  return v;
}

}  // namespace

// [[Rcpp::export]]
SEXP cpp_dataset_from_tensors(Rcpp::List tensors, bool slices) {
  return guarded([&]() -> SEXP {
    auto data = std::make_shared<mr::SourceData>();
    data->names = names_of(tensors);
    int64_t rows0 = 0;
    for (R_xlen_t k = 0; k < tensors.size(); ++k) {
      const std::string what = data->names && !(*data->names)[k].empty()
                                   ? "tensors$" + (*data->names)[k]
                                   : "tensors[[" + std::to_string(k + 1) + "]]";
      int64_t rows = 0;
      data->cols.push_back(to_column(tensors[k], slices, rows, what));
      if (k == 0) rows0 = rows;
      MR_CHECK(rows == rows0, value,
               "tensor_slices_dataset(): all components must have the same number of rows "
               "(the first dimension); `",
               what, "` has ", rows, " but the first component has ", rows0);
    }
    data->rows = tensors.size() ? rows0 : 0;
    return wrap(std::make_shared<mr::TensorSlicesDataset>(data, !slices));
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_batch(SEXP ds, double batch_size, bool drop_remainder) {
  return guarded([&] {
    return wrap(mr::make_batch(get(ds), static_cast<int64_t>(batch_size), drop_remainder));
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_shuffle(SEXP ds, double buffer_size, double seed, bool reshuffle) {
  return guarded([&] {
    return wrap(mr::make_shuffle(get(ds), static_cast<int64_t>(buffer_size),
                                 static_cast<uint64_t>(seed), reshuffle));
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_repeat(SEXP ds, double count) {
  return guarded([&] { return wrap(mr::make_repeat(get(ds), static_cast<int64_t>(count))); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_take(SEXP ds, double count) {
  return guarded([&] { return wrap(mr::make_take(get(ds), static_cast<int64_t>(count))); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_skip(SEXP ds, double count) {
  return guarded([&] { return wrap(mr::make_skip(get(ds), static_cast<int64_t>(count))); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_shard(SEXP ds, double num_shards, double index) {
  return guarded([&] {
    return wrap(
        mr::make_shard(get(ds), static_cast<int64_t>(num_shards), static_cast<int64_t>(index)));
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_cache(SEXP ds, std::string filename) {
  return guarded([&] { return wrap(mr::make_cache(get(ds), filename)); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_prefetch(SEXP ds, double buffer_size) {
  return guarded(
      [&] { return wrap(mr::make_prefetch(get(ds), static_cast<int64_t>(buffer_size))); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_map_r(SEXP ds, Rcpp::Function fn, std::string label) {
  return guarded(
      [&] { return wrap(mr::make_map(get(ds), std::make_shared<RMapFunction>(fn, label))); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_cast(SEXP ds, Rcpp::IntegerVector components, std::string dtype) {
  return guarded([&] {
    const mr::RType t = dtype == "integer"   ? mr::RType::integer
                        : dtype == "logical" ? mr::RType::logical
                                             : mr::RType::dbl;
    return wrap(mr::make_map(get(ds), mr::make_cast(components_arg(components), t)));
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_affine(SEXP ds, Rcpp::IntegerVector components, Rcpp::NumericVector scale,
                        Rcpp::NumericVector offset, std::string name) {
  return guarded([&] {
    std::vector<float> s(scale.begin(), scale.end()), o(offset.begin(), offset.end());
    return wrap(mr::make_map(get(ds), mr::make_affine(components_arg(components), s, o, name)));
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_one_hot(SEXP ds, Rcpp::IntegerVector components, double num_classes) {
  return guarded([&] {
    return wrap(mr::make_map(
        get(ds), mr::make_one_hot(components_arg(components), static_cast<int64_t>(num_classes))));
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_delay(SEXP ds, double seconds) {
  return guarded([&] { return wrap(mr::make_map(get(ds), mr::make_delay(seconds))); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_unbatch(SEXP ds) {
  return guarded([&] { return wrap(mr::make_unbatch(get(ds))); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_enumerate(SEXP ds, double start) {
  return guarded([&] { return wrap(mr::make_enumerate(get(ds), static_cast<int64_t>(start))); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_filter_r(SEXP ds, Rcpp::Function fn, std::string label) {
  return guarded(
      [&] { return wrap(mr::make_filter(get(ds), std::make_shared<RPredicate>(fn, label))); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_zip(Rcpp::List datasets) {
  return guarded([&] {
    std::vector<mr::DatasetPtr> ins;
    for (R_xlen_t k = 0; k < datasets.size(); ++k) ins.push_back(get(datasets[k]));
    return wrap(mr::make_zip(std::move(ins)));
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_concatenate(SEXP first, SEXP second) {
  return guarded([&] { return wrap(mr::make_concatenate(get(first), get(second))); });
}

// `padded_shapes`: a list of per-component shapes (NA: the batch's longest),
// or an empty list for the longest everywhere.
// [[Rcpp::export]]
SEXP cpp_dataset_padded_batch(SEXP ds, double batch_size, Rcpp::List padded_shapes,
                              Rcpp::NumericVector padding_values, bool drop_remainder) {
  return guarded([&] {
    std::vector<std::vector<int64_t>> shapes;
    for (R_xlen_t k = 0; k < padded_shapes.size(); ++k) {
      Rcpp::NumericVector s(padded_shapes[k]);
      std::vector<int64_t> dims;
      for (double d : s) dims.push_back(std::isnan(d) ? -1 : static_cast<int64_t>(d));
      shapes.push_back(std::move(dims));
    }
    std::vector<float> values(padding_values.begin(), padding_values.end());
    return wrap(mr::make_padded_batch(get(ds), static_cast<int64_t>(batch_size), std::move(shapes),
                                      std::move(values), drop_remainder));
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_window(SEXP ds, double size, double shift, double stride, bool drop_remainder) {
  return guarded([&] {
    return wrap(mr::make_window(get(ds), static_cast<int64_t>(size), static_cast<int64_t>(shift),
                                static_cast<int64_t>(stride), drop_remainder));
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_flat_map_r(SEXP ds, Rcpp::Function fn, std::string label, double cycle_length,
                            double block_length) {
  return guarded([&] {
    auto f = std::make_shared<RDatasetFunction>(fn, label);
    if (cycle_length <= 0) return wrap(mr::make_flat_map(get(ds), f));
    return wrap(mr::make_interleave(get(ds), f, static_cast<int64_t>(cycle_length),
                                    static_cast<int64_t>(block_length)));
  });
}

// What print() and length() show.
// [[Rcpp::export]]
Rcpp::List cpp_dataset_info(SEXP ds) {
  return guarded([&] {
    const mr::DatasetPtr d = get(ds);
    std::vector<std::string> chain;
    for (mr::DatasetPtr n = d; n; n = n->input()) chain.insert(chain.begin(), n->label());
    const mr::ElementSpec spec = d->spec();
    Rcpp::List shapes;
    for (const mr::ComponentSpec& c : spec.parts)
      shapes.push_back(Rcpp::NumericVector(c.shape.begin(), c.shape.end()));
    return Rcpp::List::create(
        Rcpp::Named("cardinality") = static_cast<double>(d->cardinality()),
        Rcpp::Named("chain") = Rcpp::wrap(chain), Rcpp::Named("spec") = mr::spec_string(spec),
        Rcpp::Named("components") = spec.known ? static_cast<int>(spec.parts.size()) : NA_INTEGER,
        Rcpp::Named("memory") = static_cast<double>(mr::total_memory_bytes(*d)),
        Rcpp::Named("caller_thread") = d->needs_caller_thread(), Rcpp::Named("shapes") = shapes,
        Rcpp::Named("names") =
            spec.names ? Rcpp::CharacterVector(Rcpp::wrap(*spec.names)) : Rcpp::CharacterVector());
  });
}

// [[Rcpp::export]]
SEXP cpp_dataset_iterator(SEXP ds) {
  return guarded([&]() -> SEXP {
    auto state = std::make_unique<IteratorState>();
    state->dataset = get(ds);
    state->it = state->dataset->iterate(state->dataset->next_iteration_key());
    return IteratorXPtr(state.release(), true);
  });
}

// The next element as an R list, or NULL at the end of the pass.
// [[Rcpp::export]]
SEXP cpp_iterator_next(SEXP it) {
  return guarded([&]() -> SEXP {
    IteratorXPtr p(it);
    MR_CHECK(p.get() != nullptr && p->it != nullptr, value, "the iterator has been released");
    mr::Element e;
    if (!p->it->next(e)) {
      p->it.reset();  // ends a prefetch thread now rather than at garbage collection
      return R_NilValue;
    }
    return element_to_r(e);
  });
}

// Releases an iterator's pass (and its threads) before garbage collection.
// [[Rcpp::export]]
void cpp_iterator_release(SEXP it) {
  IteratorXPtr p(it);
  if (p.get() != nullptr) p->it.reset();
}

// The batch source of fit()/evaluate()/predict(). continue_passes: keep one
// pass going across epochs (steps_per_epoch given). `arg` and `roles` name
// the data and its components in errors (a non-finite value); only the
// first `used` components are checked (-1: all). `model`: a multi-worker
// job's model whose workers each read their own files of a dataset stored
// as several (dist/worker_data.h); NULL for predict(), which computes every
// row on every worker.
// [[Rcpp::export]]
SEXP cpp_dataset_source(SEXP ds, bool continue_passes, std::string arg,
                        std::vector<std::string> roles, double used, SEXP model,
                        std::vector<int> value_kinds) {
  return guarded([&]() -> SEXP {
    mr::DatasetPtr data = get(ds);
    mr::FileShards shards;
    if (model != R_NilValue) {
      Rcpp::XPtr<mr::Model> m(model);
      if (m->workers()) shards = mr::worker_dataset(*m->workers(), data);
    }
    auto ds_source = std::make_shared<mr::DatasetSource>(shards.dataset ? shards.dataset : data,
                                                         continue_passes);
    if (shards.dataset) ds_source->set_job_batches(shards.global_batches);
    ds_source->describe(arg, roles, static_cast<int64_t>(used));
    ds_source->set_value_kinds(value_kinds);
    auto source = std::make_unique<std::shared_ptr<mr::BatchSource>>(std::move(ds_source));
    return Rcpp::XPtr<std::shared_ptr<mr::BatchSource>>(source.release(), true);
  });
}

// Batches of a pass of a batch source (NA when unknown, Inf when infinite).
// [[Rcpp::export]]
double cpp_source_batches(SEXP source) {
  return guarded([&] {
    Rcpp::XPtr<std::shared_ptr<mr::BatchSource>> p(source);
    MR_CHECK(p.get() != nullptr && *p != nullptr, internal, "the batch source handle is empty");
    const int64_t n = (*p)->batches();
    return n >= 0 ? static_cast<double>(n) : NA_REAL;
  });
}

// Benchmark helper: one pass, sleeping `step_seconds` after each element (a
// consumer of known cost, like a training step that holds the thread).
// Returns elements and wall seconds.
// [[Rcpp::export]]
Rcpp::NumericVector cpp_dataset_drain(SEXP ds, double step_seconds) {
  return guarded([&] {
    const mr::DatasetPtr d = get(ds);
    const auto t0 = std::chrono::steady_clock::now();
    auto it = d->iterate(d->next_iteration_key());
    mr::Element e;
    double n = 0;
    while (it->next(e)) {
      ++n;
      if (step_seconds > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(step_seconds));
    }
    it.reset();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return Rcpp::NumericVector::create(Rcpp::Named("elements") = n, Rcpp::Named("seconds") = secs);
  });
}

// Datasets read straight from IDX files or .npz arrays (no R copy).
// [[Rcpp::export]]
SEXP cpp_dataset_from_idx(std::vector<std::string> paths) {
  return guarded(
      [&] { return wrap(std::make_shared<mr::TensorSlicesDataset>(mr::idx_source(paths))); });
}

// [[Rcpp::export]]
SEXP cpp_dataset_from_npz(std::string path, std::vector<std::string> keys) {
  return guarded(
      [&] { return wrap(std::make_shared<mr::TensorSlicesDataset>(mr::npz_source(path, keys))); });
}

// i16: a dataset stored as several files, read one part at a time: `parts`
// is a list of character vectors (an .npz file, or one IDX file per
// component, per part).
// [[Rcpp::export]]
SEXP cpp_dataset_from_file_parts(std::string format, Rcpp::List parts,
                                 std::vector<std::string> keys) {
  return guarded([&] {
    std::vector<std::vector<std::string>> paths;
    for (R_xlen_t i = 0; i < parts.size(); ++i)
      paths.push_back(Rcpp::as<std::vector<std::string>>(parts[i]));
    const mr::FileFormat f = format == "idx" ? mr::FileFormat::idx : mr::FileFormat::npz;
    return wrap(std::make_shared<mr::FilePartsDataset>(f, std::move(paths), std::move(keys)));
  });
}
