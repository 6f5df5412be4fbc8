// An optional engine of a backend, made on its first use: cuDNN's handle for
// the convolutions, which an MLP never needs. Made at most once; a failure to
// make it (mr::Error: a missing cuDNN sub-library, a version mismatch) is not
// fatal: get() then returns null for good, the caller takes its fallback
// path, and note() says why in one line the R side can print. Plain C++ (no
// CUDA): the policy is tested on the CPU with a fake engine.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "core/error.h"

namespace mr {

template <class T>
class OptionalEngine {
 public:
  // what: the engine ("cuDNN"); fallback: what runs without it ("convolutions
  // run im2col + cuBLAS"); both go into the note.
  OptionalEngine(std::string what, std::string fallback)
      : what_(std::move(what)), fallback_(std::move(fallback)) {}
  OptionalEngine(const OptionalEngine&) = delete;
  OptionalEngine& operator=(const OptionalEngine&) = delete;

  // The engine, made by make() (returning std::unique_ptr<T>) on the first
  // call; null when that failed (then or before).
  template <class Make>
  T* get(Make&& make) {
    if (!tried_) {
      tried_ = true;
      try {
        engine_ = make();
      } catch (const Error& e) {
        engine_.reset();
        note_ = unavailable_note(what_, e.what(), fallback_);
      }
    }
    return engine_.get();
  }
  // The engine if it was made, without making it.
  T* made() const { return engine_.get(); }
  bool tried() const { return tried_; }
  // "" while the engine is usable or not tried yet; else e.g. "cuDNN
  // unavailable (cudnnCreate failed ...): convolutions run im2col + cuBLAS".
  const std::string& note() const { return note_; }

  // Frees the engine (the backend's destructor, before its allocator).
  void reset() noexcept { engine_.reset(); }
  // Gives the engine up without freeing it (a backend whose GPU may still
  // use its memory leaks it rather than freeing it).
  void abandon() noexcept { (void)engine_.release(); }

  // The one-line note: line breaks of `why` become spaces.
  static std::string unavailable_note(const std::string& what, std::string why,
                                      const std::string& fallback) {
    for (char& c : why)
      if (c == '\n' || c == '\r') c = ' ';
    return what + " unavailable (" + why + "): " + fallback;
  }

 private:
  std::string what_, fallback_;
  std::unique_ptr<T> engine_;
  bool tried_ = false;
  std::string note_;
};

}  // namespace mr
