#include "io/h5_file.h"

#include <hdf5.h>

#include <cstring>
#include <sstream>

#include "core/error.h"

namespace mr {

namespace {

// Owns an HDF5 identifier; `close` is the matching H5?close function.
class Hid {
 public:
  Hid() = default;
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Hid() { reset(); }
  Hid(Hid&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = -1;
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

void silence() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

herr_t walk_cb(unsigned, const H5E_error2_t* e, void* data) {
  auto* out = static_cast<std::string*>(data);
  if (e->desc && *e->desc) *out = e->desc;  // the last frame walked is the innermost
  return 0;
}

// HDF5's innermost error message (the stack is cleared).
std::string detail() {
  std::string msg;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, &msg);
  H5Eclear2(H5E_DEFAULT);
  return msg.empty() ? "HDF5 error" : msg;
}

[[noreturn]] void h5_fail(const std::string& what, const std::string& object,
                          const std::string& action) {
  fail(ErrorKind::io, what, ": ", action, (object.empty() ? std::string() : " '" + object + "'"),
       ": ", detail());
}

std::string abs_path(const std::string& path) { return path.empty() ? "/" : path; }

// A unique in-memory file name per object (the core driver never touches
// the file system without a backing store, but HDF5 tracks open files by name).
std::string memory_name(const void* self, const char* kind) {
  std::ostringstream os;
  os << "mirrored-" << kind << "-" << self << ".h5";
  return os.str();
}

Hid string_type() {
  Hid t(H5Tcopy(H5T_C_S1), H5Tclose);
  if (t.ok()) {
    H5Tset_size(t.get(), H5T_VARIABLE);
    H5Tset_cset(t.get(), H5T_CSET_UTF8);
  }
  return t;
}

}  // namespace

// ---------------------------------------------------------------------------

struct H5Writer::Impl {
  std::string what;
  Hid file;
};

H5Writer::H5Writer(std::string what) : impl_(std::make_unique<Impl>()) {
  silence();
  impl_->what = std::move(what);
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.ok() || H5Pset_fapl_core(fapl.get(), size_t{1} << 20, 0) < 0)
    h5_fail(impl_->what, "", "cannot set up an in-memory HDF5 file");
  impl_->file = Hid(
      H5Fcreate(memory_name(this, "w").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
  if (!impl_->file.ok()) h5_fail(impl_->what, "", "cannot create an HDF5 file");
}

H5Writer::~H5Writer() { silence(); }

void H5Writer::group(const std::string& path) {
  silence();
  std::string sofar;
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    sofar = path.substr(0, slash);
    if (!sofar.empty() && H5Lexists(impl_->file.get(), sofar.c_str(), H5P_DEFAULT) <= 0) {
      Hid g(H5Gcreate2(impl_->file.get(), sofar.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
            H5Gclose);
      if (!g.ok()) h5_fail(impl_->what, sofar, "cannot create group");
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
}

void H5Writer::attr_string(const std::string& path, const std::string& name,
                           const std::string& value) {
  silence();
  Hid obj(H5Oopen(impl_->file.get(), abs_path(path).c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.ok()) h5_fail(impl_->what, path, "cannot open");
  Hid type = string_type();
  Hid space(H5Screate(H5S_SCALAR), H5Sclose);
  Hid attr(H5Acreate2(obj.get(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
           H5Aclose);
  const char* p = value.c_str();
  if (!attr.ok() || H5Awrite(attr.get(), type.get(), &p) < 0)
    h5_fail(impl_->what, abs_path(path) + "@" + name, "cannot write attribute");
}

void H5Writer::dataset_f32(const std::string& path, const std::vector<int64_t>& dims,
                           const float* data) {
  silence();
  std::vector<hsize_t> d(dims.begin(), dims.end());
  Hid space(d.empty() ? H5Screate(H5S_SCALAR)
                      : H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr),
            H5Sclose);
  Hid ds(H5Dcreate2(impl_->file.get(), path.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                    H5P_DEFAULT, H5P_DEFAULT),
         H5Dclose);
  if (!ds.ok() || H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    h5_fail(impl_->what, path, "cannot write dataset");
}

void H5Writer::scalar_f32(const std::string& path, float v) { dataset_f32(path, {}, &v); }

void H5Writer::scalar_i64(const std::string& path, int64_t v) {
  silence();
  Hid space(H5Screate(H5S_SCALAR), H5Sclose);
  Hid ds(H5Dcreate2(impl_->file.get(), path.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT,
                    H5P_DEFAULT, H5P_DEFAULT),
         H5Dclose);
  if (!ds.ok() || H5Dwrite(ds.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0)
    h5_fail(impl_->what, path, "cannot write dataset");
}

Bytes H5Writer::finish() {
  silence();
  if (H5Fflush(impl_->file.get(), H5F_SCOPE_GLOBAL) < 0) h5_fail(impl_->what, "", "cannot flush");
  const ssize_t n = H5Fget_file_image(impl_->file.get(), nullptr, 0);
  if (n < 0) h5_fail(impl_->what, "", "cannot get the file image");
  Bytes out(static_cast<size_t>(n));
  if (H5Fget_file_image(impl_->file.get(), out.data(), out.size()) != n)
    h5_fail(impl_->what, "", "cannot get the file image");
  impl_->file.reset();
  return out;
}

// ---------------------------------------------------------------------------

struct H5Reader::Impl {
  Hid file;
};

H5Reader::H5Reader(const Bytes& image, std::string what)
    : impl_(std::make_unique<Impl>()), what_(std::move(what)) {
  silence();
  // The HDF5 signature is at offset 0 (or a power of two >= 512 with a user
  // block, which Keras never writes): reject anything else before HDF5 sees it.
  static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (image.size() < 8 || std::memcmp(image.data(), sig, 8) != 0)
    fail(ErrorKind::io, what_, ": not an HDF5 file (bad signature; truncated or corrupted?)");
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.ok() || H5Pset_fapl_core(fapl.get(), size_t{1} << 20, 0) < 0 ||
      H5Pset_file_image(fapl.get(), const_cast<uint8_t*>(image.data()), image.size()) < 0)
    h5_fail(what_, "", "cannot set up the HDF5 file image");
  impl_->file = Hid(H5Fopen(memory_name(this, "r").c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!impl_->file.ok()) h5_fail(what_, "", "not a readable HDF5 file (truncated or corrupted?)");
}

H5Reader::~H5Reader() { silence(); }

namespace {
// H5I type of the object at `path`, or H5I_BADID when there is none.
H5I_type_t object_type(hid_t file, const std::string& path) {
  silence();
  if (!path.empty() && H5Lexists(file, path.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return H5I_BADID;
  }
  Hid obj(H5Oopen(file, abs_path(path).c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.ok()) {
    H5Eclear2(H5E_DEFAULT);
    return H5I_BADID;
  }
  return H5Iget_type(obj.get());
}
}  // namespace

bool H5Reader::is_group(const std::string& path) const {
  return object_type(impl_->file.get(), path) == H5I_GROUP;
}

bool H5Reader::is_dataset(const std::string& path) const {
  return !path.empty() && object_type(impl_->file.get(), path) == H5I_DATASET;
}

namespace {
herr_t collect_cb(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> H5Reader::children(const std::string& path) const {
  silence();
  Hid g(H5Gopen2(impl_->file.get(), abs_path(path).c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.ok()) h5_fail(what_, abs_path(path), "cannot open group");
  std::vector<std::string> out;
  hsize_t idx = 0;
  if (H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, &idx, collect_cb, &out) < 0)
    h5_fail(what_, abs_path(path), "cannot list group");
  return out;
}

std::string H5Reader::attr_string(const std::string& path, const std::string& name,
                                  bool* found) const {
  silence();
  *found = false;
  Hid obj(H5Oopen(impl_->file.get(), abs_path(path).c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.ok()) h5_fail(what_, abs_path(path), "cannot open");
  if (H5Aexists(obj.get(), name.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return "";
  }
  Hid attr(H5Aopen(obj.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
  Hid ftype(attr.ok() ? H5Aget_type(attr.get()) : -1, H5Tclose);
  Hid space(attr.ok() ? H5Aget_space(attr.get()) : -1, H5Sclose);
  const std::string where = abs_path(path) + "@" + name;
  if (!ftype.ok() || !space.ok()) h5_fail(what_, where, "cannot read attribute");
  if (H5Tget_class(ftype.get()) != H5T_STRING || H5Sget_simple_extent_npoints(space.get()) != 1)
    fail(ErrorKind::io, what_, ": attribute '", where, "' is not a single string");
  std::string out;
  if (H5Tis_variable_str(ftype.get()) > 0) {
    Hid mtype = string_type();
    char* p = nullptr;
    if (H5Aread(attr.get(), mtype.get(), &p) < 0) h5_fail(what_, where, "cannot read attribute");
    if (p) out = p;
    H5free_memory(p);
  } else {
    const size_t n = H5Tget_size(ftype.get());
    if (n == 0 || n > (size_t{1} << 26))
      fail(ErrorKind::io, what_, ": attribute '", where, "' has an absurd size");
    std::vector<char> buf(n + 1, '\0');
    Hid mtype(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mtype.get(), n);
    if (H5Aread(attr.get(), mtype.get(), buf.data()) < 0)
      h5_fail(what_, where, "cannot read attribute");
    out.assign(buf.data());
  }
  *found = true;
  return out;
}

std::vector<int64_t> H5Reader::dims(const std::string& path) const {
  silence();
  Hid ds(H5Dopen2(impl_->file.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) h5_fail(what_, path, "cannot open dataset");
  Hid space(H5Dget_space(ds.get()), H5Sclose);
  if (!space.ok()) h5_fail(what_, path, "cannot read the dataspace of");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > 32)
    fail(ErrorKind::io, what_, ": dataset '", path, "' has an absurd rank (", rank, ")");
  std::vector<hsize_t> d(static_cast<size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), d.data(), nullptr) < 0)
    h5_fail(what_, path, "cannot read the dimensions of");
  std::vector<int64_t> out;
  double total = 1;
  for (hsize_t x : d) {
    total *= static_cast<double>(x);
    out.push_back(static_cast<int64_t>(x));
    if (x > (hsize_t{1} << 40) || total > static_cast<double>(int64_t{1} << 40))
      fail(ErrorKind::io, what_, ": dataset '", path, "' has absurd dimensions");
  }
  return out;
}

namespace {
std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}
}  // namespace

std::vector<float> H5Reader::read_f32(const std::string& path,
                                      const std::vector<int64_t>& expect) const {
  const std::vector<int64_t> d = dims(path);
  if (d != expect)
    fail(ErrorKind::io, what_, ": dataset '", path, "' has shape ", dims_str(d),
         ", the model expects ", dims_str(expect));
  Hid ds(H5Dopen2(impl_->file.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  Hid type(ds.ok() ? H5Dget_type(ds.get()) : -1, H5Tclose);
  if (!type.ok()) h5_fail(what_, path, "cannot open dataset");
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    fail(ErrorKind::io, what_, ": dataset '", path, "' is not numeric");
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  std::vector<float> out(static_cast<size_t>(n));
  if (n > 0 && H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    h5_fail(what_, path, "cannot read dataset (truncated or corrupted?)");
  return out;
}

double H5Reader::read_scalar(const std::string& path) const {
  const std::vector<int64_t> d = dims(path);
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  if (n != 1) fail(ErrorKind::io, what_, ": dataset '", path, "' is not a scalar");
  Hid ds(H5Dopen2(impl_->file.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  double v = 0;
  if (!ds.ok() || H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0)
    h5_fail(what_, path, "cannot read dataset");
  return v;
}

int64_t H5Reader::read_scalar_i64(const std::string& path) const {
  const std::vector<int64_t> d = dims(path);
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  if (n != 1) fail(ErrorKind::io, what_, ": dataset '", path, "' is not a scalar");
  Hid ds(H5Dopen2(impl_->file.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  int64_t v = 0;
  if (!ds.ok() || H5Dread(ds.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0)
    h5_fail(what_, path, "cannot read dataset");
  return v;
}

}  // namespace mr
