#include "io/npz.h"

#include <zip.h>

#include <cstring>
#include <memory>

#include "core/error.h"

namespace mr {

namespace {

constexpr int64_t kMaxValues = int64_t{1} << 34;

// The value of `key` in the header dict: "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3),
// }".
std::string dict_value(const std::string& h, const std::string& key, const std::string& what) {
  const size_t k = h.find("'" + key + "'");
  MR_CHECK(k != std::string::npos, io, what, ": the .npy header has no '", key, "'");
  size_t p = h.find(':', k);
  MR_CHECK(p != std::string::npos, io, what, ": malformed .npy header");
  ++p;
  while (p < h.size() && h[p] == ' ') ++p;
  size_t end = p;
  if (h[p] == '(') {
    end = h.find(')', p);
    MR_CHECK(end != std::string::npos, io, what, ": malformed shape in the .npy header");
    return h.substr(p, end - p + 1);
  }
  if (h[p] == '\'') {
    end = h.find('\'', p + 1);
    MR_CHECK(end != std::string::npos, io, what, ": malformed .npy header");
    return h.substr(p + 1, end - p - 1);
  }
  while (end < h.size() && h[end] != ',' && h[end] != '}') ++end;
  return h.substr(p, end - p);
}

struct ZipClose {
  void operator()(zip_t* z) const noexcept { zip_discard(z); }
};
struct ZipFileClose {
  void operator()(zip_file_t* f) const noexcept { zip_fclose(f); }
};

}  // namespace

int64_t NpyArray::size() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

NpyArray parse_npy(const std::vector<uint8_t>& b, const std::string& what) {
  static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  MR_CHECK(b.size() >= 10 && std::memcmp(b.data(), kMagic, 6) == 0, io, what,
           " is not a .npy array (bad magic string)");
  const int major = b[6];
  MR_CHECK(major >= 1 && major <= 3, io, what, " has .npy format version ", major,
           "; versions 1-3 are supported");
  size_t hlen = 0, start = 0;
  if (major == 1) {
    hlen = b[8] | (size_t{b[9]} << 8);
    start = 10;
  } else {
    MR_CHECK(b.size() >= 12, io, what, " is truncated (in the header)");
    hlen = b[8] | (size_t{b[9]} << 8) | (size_t{b[10]} << 16) | (size_t{b[11]} << 24);
    start = 12;
  }
  MR_CHECK(start + hlen <= b.size(), io, what, " is truncated (in the header)");
  const std::string h(reinterpret_cast<const char*>(b.data() + start), hlen);
  const std::string descr = dict_value(h, "descr", what);
  const std::string fortran = dict_value(h, "fortran_order", what);
  const std::string shape = dict_value(h, "shape", what);
  NpyArray a;
  size_t item = 1;
  if (descr == "|u1" || descr == "<u1") {
    a.is_int64 = false;
  } else if (descr == "<i8") {
    a.is_int64 = true;
    item = 8;
  } else {
    fail(ErrorKind::io, what, " holds dtype '", descr,
         "'; only unsigned bytes ('|u1') and little-endian int64 ('<i8') are supported");
  }
  MR_CHECK(fortran == "False", io, what, " is in Fortran order; only C-order arrays are supported");
  int64_t total = 1;
  size_t p = 1;
  while (p < shape.size() - 1) {
    while (p < shape.size() && (shape[p] == ' ' || shape[p] == ',')) ++p;
    if (p >= shape.size() - 1) break;
    size_t q = p;
    while (q < shape.size() && shape[q] >= '0' && shape[q] <= '9') ++q;
    MR_CHECK(q > p, io, what, ": malformed shape ", shape);
    const int64_t d = std::stoll(shape.substr(p, q - p));
    MR_CHECK(d >= 0 && (d == 0 || d <= kMaxValues / std::max<int64_t>(total, 1)), io, what,
             " declares absurd dimensions");
    total *= d;
    a.dims.push_back(d);
    p = q;
  }
  const size_t data = start + hlen;
  const size_t want = static_cast<size_t>(total) * item;
  MR_CHECK(b.size() - data == want, io, what, " holds ", b.size() - data, " data bytes; its shape ",
           shape, " needs ", want);
  if (a.is_int64) {
    a.i64.resize(static_cast<size_t>(total));
    if (want)
      std::memcpy(a.i64.data(), b.data() + data, want);  // little-endian host (x86-64, arm64)
  } else {
    a.u8.assign(b.begin() + static_cast<long>(data), b.end());
  }
  return a;
}

std::map<std::string, NpyArray> read_npz(const std::string& path) {
  int err = 0;
  std::unique_ptr<zip_t, ZipClose> z(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err));
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    const std::string msg = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    fail(ErrorKind::io, "cannot read '", path, "' as an .npz (zip) archive: ", msg);
  }
  std::map<std::string, NpyArray> out;
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    MR_CHECK(zip_stat_index(z.get(), static_cast<zip_uint64_t>(i), 0, &st) == 0, io, "'", path,
             "': unreadable member");
    std::string name = st.name ? st.name : "";
    const std::string what = "'" + path + "' member '" + name + "'";
    MR_CHECK(st.size < (uint64_t{1} << 36), io, what, " is too large");
    std::unique_ptr<zip_file_t, ZipFileClose> f(
        zip_fopen_index(z.get(), static_cast<zip_uint64_t>(i), 0));
    MR_CHECK(f != nullptr, io, what, " cannot be opened: ", zip_strerror(z.get()));
    std::vector<uint8_t> bytes(static_cast<size_t>(st.size));
    const zip_int64_t got = bytes.empty() ? 0 : zip_fread(f.get(), bytes.data(), bytes.size());
    MR_CHECK(got == static_cast<zip_int64_t>(bytes.size()), io, what, " is truncated or corrupt");
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
      name.resize(name.size() - 4);
    out.emplace(name, parse_npy(bytes, what));
  }
  return out;
}

}  // namespace mr
