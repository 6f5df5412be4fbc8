#include "data/builtin_transforms.h"

#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace mr {

namespace {

std::string list_string(const std::vector<int>& comps) {
  std::ostringstream os;
  if (comps.size() != 1) os << "c(";
  for (size_t i = 0; i < comps.size(); ++i) os << (i ? ", " : "") << comps[i] + 1;
  if (comps.size() != 1) os << ")";
  return os.str();
}

Component& component(Element& e, int k, const char* fn) {
  MR_CHECK(k >= 0 && static_cast<size_t>(k) < e.parts.size(), value, fn, "(): the elements have ",
           e.parts.size(), " components; there is no component ", k + 1);
  return e.parts[static_cast<size_t>(k)];
}

class Cast final : public ElementFunction {
 public:
  Cast(std::vector<int> comps, RType to) : comps_(std::move(comps)), to_(to) {}
  void apply(Element& e) override {
    for (int k : comps_) {
      Component& c = component(e, k, "dataset_cast");
      if (to_ == RType::integer)
        for (float& v : c.values) v = std::trunc(v);
      else if (to_ == RType::logical)
        for (float& v : c.values) v = v != 0.0f ? 1.0f : 0.0f;
      c.rtype = to_;
    }
  }
  ElementSpec spec(const ElementSpec& in) const override {
    ElementSpec s = in;
    for (int k : comps_)
      if (s.known && static_cast<size_t>(k) < s.parts.size())
        s.parts[static_cast<size_t>(k)].rtype = to_;
    return s;
  }
  std::string label() const override {
    return std::string("cast(dtype = \"") + rtype_name(to_) +
           "\", components = " + list_string(comps_) + ")";
  }

 private:
  std::vector<int> comps_;
  RType to_;
};

class Affine final : public ElementFunction {
 public:
  Affine(std::vector<int> comps, std::vector<float> scale, std::vector<float> offset,
         std::string name)
      : comps_(std::move(comps)),
        scale_(std::move(scale)),
        offset_(std::move(offset)),
        name_(std::move(name)) {
    MR_CHECK(!scale_.empty() && !offset_.empty(), value, "dataset_", name_,
             "(): empty scale or offset");
  }
  void apply(Element& e) override {
    for (int k : comps_) {
      Component& c = component(e, k, ("dataset_" + name_).c_str());
      const size_t last = c.shape.empty() ? 1 : static_cast<size_t>(c.shape.back());
      check_len(scale_.size(), last, "scale", c);
      check_len(offset_.size(), last, "offset", c);
      float* v = c.values.data();
      const size_t n = c.values.size();
      if (scale_.size() == 1 && offset_.size() == 1) {
        const float s = scale_[0], o = offset_[0];
        for (size_t i = 0; i < n; ++i) v[i] = v[i] * s + o;
      } else {
        for (size_t i = 0; i < n; i += last)
          for (size_t j = 0; j < last; ++j)
            v[i + j] = v[i + j] * scale_[scale_.size() == 1 ? 0 : j] +
                       offset_[offset_.size() == 1 ? 0 : j];
      }
      c.rtype = RType::dbl;
    }
  }
  ElementSpec spec(const ElementSpec& in) const override {
    ElementSpec s = in;
    for (int k : comps_)
      if (s.known && static_cast<size_t>(k) < s.parts.size())
        s.parts[static_cast<size_t>(k)].rtype = RType::dbl;
    return s;
  }
  std::string label() const override {
    std::ostringstream os;
    os << name_ << "(components = " << list_string(comps_);
    if (scale_.size() == 1 && offset_.size() == 1)
      os << ", scale = " << scale_[0] << ", offset = " << offset_[0];
    else
      os << ", " << std::max(scale_.size(), offset_.size()) << " per-feature scales and offsets";
    os << ")";
    return os.str();
  }
  void fingerprint(Hasher& h) const override {
    h.str(label());
    h.bytes(scale_.data(), scale_.size() * sizeof(float));
    h.bytes(offset_.data(), offset_.size() * sizeof(float));
  }

 private:
  void check_len(size_t len, size_t last, const char* what, const Component& c) const {
    MR_CHECK(len == 1 || len == last, shape, "dataset_", name_, "(): `", what, "` has ", len,
             " values; a component of shape ", shape_string(c.shape), " needs 1 or ", last);
  }
  std::vector<int> comps_;
  std::vector<float> scale_, offset_;
  std::string name_;
};

class OneHot final : public ElementFunction {
 public:
  OneHot(std::vector<int> comps, int64_t classes) : comps_(std::move(comps)), classes_(classes) {
    MR_CHECK(classes_ > 0, value, "`num_classes` must be a positive integer, got ", classes_);
  }
  void apply(Element& e) override {
    for (int k : comps_) {
      Component& c = component(e, k, "dataset_one_hot");
      std::vector<float> out(c.values.size() * static_cast<size_t>(classes_), 0.0f);
      for (size_t i = 0; i < c.values.size(); ++i) {
        const float v = c.values[i];
        MR_CHECK(v == std::floor(v) && v >= 0.0f && v < static_cast<float>(classes_), value,
                 "dataset_one_hot(): component ", k + 1, " holds ", v,
                 "; class indices must be whole numbers in 0..", classes_ - 1);
        out[i * static_cast<size_t>(classes_) + static_cast<size_t>(v)] = 1.0f;
      }
      c.values = std::move(out);
      c.shape.push_back(classes_);
      c.rtype = RType::dbl;
    }
  }
  ElementSpec spec(const ElementSpec& in) const override {
    ElementSpec s = in;
    for (int k : comps_) {
      if (!s.known || static_cast<size_t>(k) >= s.parts.size()) continue;
      s.parts[static_cast<size_t>(k)].shape.push_back(classes_);
      s.parts[static_cast<size_t>(k)].rtype = RType::dbl;
    }
    return s;
  }
  std::string label() const override {
    return "one_hot(num_classes = " + std::to_string(classes_) +
           ", components = " + list_string(comps_) + ")";
  }

 private:
  std::vector<int> comps_;
  int64_t classes_;
};

class Delay final : public ElementFunction {
 public:
  explicit Delay(double seconds) : seconds_(seconds) {
    MR_CHECK(seconds_ >= 0 && std::isfinite(seconds_), value, "delay must be >= 0 seconds");
  }
  void apply(Element&) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds_));
  }
  ElementSpec spec(const ElementSpec& in) const override { return in; }
  std::string label() const override {
    std::ostringstream os;
    os << "delay(seconds = " << seconds_ << ")";
    return os.str();
  }

 private:
  double seconds_;
};

}  // namespace

std::shared_ptr<ElementFunction> make_cast(std::vector<int> components, RType to) {
  return std::make_shared<Cast>(std::move(components), to);
}
std::shared_ptr<ElementFunction> make_affine(std::vector<int> components, std::vector<float> scale,
                                             std::vector<float> offset, std::string name) {
  return std::make_shared<Affine>(std::move(components), std::move(scale), std::move(offset),
                                  std::move(name));
}
std::shared_ptr<ElementFunction> make_one_hot(std::vector<int> components, int64_t num_classes) {
  return std::make_shared<OneHot>(std::move(components), num_classes);
}
std::shared_ptr<ElementFunction> make_delay(double seconds) {
  return std::make_shared<Delay>(seconds);
}

}  // namespace mr
