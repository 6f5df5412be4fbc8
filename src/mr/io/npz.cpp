#include "io/npz.h"

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "io/zip_archive.h"

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

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

size_t dtype_bytes(NpyDtype t) {
  switch (t) {
    case NpyDtype::u8:
      return 1;
    case NpyDtype::f32:
      return 4;
    default:
      return 8;
  }
}

const char* dtype_descr(NpyDtype t) {
  switch (t) {
    case NpyDtype::u8:
      return "|u1";
    case NpyDtype::i64:
      return "<i8";
    case NpyDtype::f32:
      return "<f4";
    default:
      return "<f8";
  }
}

struct ZipClose {
  void operator()(zip_t* z) const noexcept { zip_discard(z); }
};
struct ZipFileClose {
  void operator()(zip_file_t* f) const noexcept { zip_fclose(f); }
};

// Where the header of the .npy bytes b[0..n) ends (the data's offset), from
// the fixed part: the magic string, the version and the header's length
// (2 bytes in format 1, 4 in formats 2 and 3). `start`: where the header's
// text begins.
size_t npy_header_end(const uint8_t* b, size_t n, const std::string& what, size_t& start) {
  static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  MR_CHECK(n >= 10 && std::memcmp(b, kMagic, 6) == 0, io, what,
           " is not a .npy array (bad magic string)");
  const int major = b[6];
  MR_CHECK(major >= 1 && major <= 3, io, what, " has .npy format version ", major,
           "; versions 1-3 are supported");
  if (major == 1) {
    start = 10;
    return start + (b[8] | (size_t{b[9]} << 8));
  }
  MR_CHECK(n >= 12, io, what, " is truncated (in the header)");
  start = 12;
  return start + (b[8] | (size_t{b[9]} << 8) | (size_t{b[10]} << 16) | (size_t{b[11]} << 24));
}

// The member's `bytes` hold exactly the header and the data it declares.
void check_npy_size(const NpyHeader& h, size_t bytes, const std::string& what) {
  MR_CHECK(bytes - h.data_offset == h.data_bytes, io, what, " holds ", bytes - h.data_offset,
           " data bytes; its shape ", shape_text(h.dims), " needs ", h.data_bytes);
}

}  // namespace

int64_t NpyArray::size() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

NpyHeader parse_npy_header(const uint8_t* b, size_t n, const std::string& what) {
  size_t start = 0;
  const size_t end = npy_header_end(b, n, what, start);
  MR_CHECK(end <= n, io, what, " is truncated (in the header)");
  const size_t hlen = end - start;
  const std::string h(reinterpret_cast<const char*>(b + start), hlen);
  const std::string descr = dict_value(h, "descr", what);
  const std::string fortran = dict_value(h, "fortran_order", what);
  const std::string shape = dict_value(h, "shape", what);
  NpyHeader out;
  if (descr == "|u1" || descr == "<u1") {
    out.dtype = NpyDtype::u8;
  } else if (descr == "<i8") {
    out.dtype = NpyDtype::i64;
  } else if (descr == "<f4") {
    out.dtype = NpyDtype::f32;
  } else if (descr == "<f8") {
    out.dtype = NpyDtype::f64;
  } else {
    fail(ErrorKind::io, what, " holds dtype '", descr,
         "'; only unsigned bytes ('|u1'), little-endian int64 ('<i8'), float32 ('<f4') and "
         "float64 ('<f8') are supported");
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
    out.dims.push_back(d);
    p = q;
  }
  out.data_offset = start + hlen;
  out.data_bytes = static_cast<size_t>(total) * dtype_bytes(out.dtype);
  return out;
}

NpyArray parse_npy(const std::vector<uint8_t>& b, const std::string& what) {
  const NpyHeader h = parse_npy_header(b.data(), b.size(), what);
  check_npy_size(h, b.size(), what);
  const size_t want = h.data_bytes;
  NpyArray a;
  a.dims = h.dims;
  a.dtype = h.dtype;
  const uint8_t* src = b.data() + h.data_offset;  // little-endian host (x86-64, arm64)
  switch (h.dtype) {
    case NpyDtype::u8:
      a.u8.assign(src, src + want);
      break;
    case NpyDtype::i64:
      a.i64.resize(want / 8);
      if (want) std::memcpy(a.i64.data(), src, want);
      break;
    case NpyDtype::f32:
      a.f32.resize(want / 4);
      if (want) std::memcpy(a.f32.data(), src, want);
      break;
    case NpyDtype::f64:
      a.f32.resize(want / 8);
      for (size_t i = 0; i < a.f32.size(); ++i) {
        double v;
        std::memcpy(&v, src + 8 * i, 8);
        a.f32[i] = static_cast<float>(v);
      }
      break;
  }
  return a;
}

std::vector<uint8_t> npz_bytes(const std::vector<NpyMember>& members, const std::string& what) {
  std::vector<ZipMember> files;
  for (const NpyMember& m : members) {
    int64_t total = 1;
    for (int64_t d : m.dims) {
      MR_CHECK(d >= 0, value, what, ": array '", m.name, "' has a negative dimension");
      total *= d;
    }
    MR_CHECK(m.data.size() == static_cast<size_t>(total) * dtype_bytes(m.dtype), internal, what,
             ": array '", m.name, "' holds the wrong number of bytes");
    // Format 1.0: the header dict padded with spaces and a newline so the
    // data starts at a multiple of 64 bytes, as numpy writes it.
    std::string dict = std::string("{'descr': '") + dtype_descr(m.dtype) +
                       "', 'fortran_order': False, 'shape': " + shape_text(m.dims) + ", }";
    const size_t unpadded = 10 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict.push_back('\n');
    MR_CHECK(dict.size() < 65536, value, what, ": array '", m.name, "' has too many dimensions");
    ZipMember f;
    f.name = m.name + ".npy";
    check_member_name(f.name, what);
    f.data = {0x93,
              'N',
              'U',
              'M',
              'P',
              'Y',
              1,
              0,
              static_cast<uint8_t>(dict.size() & 0xff),
              static_cast<uint8_t>(dict.size() >> 8)};
    f.data.insert(f.data.end(), dict.begin(), dict.end());
    f.data.insert(f.data.end(), m.data.begin(), m.data.end());
    files.push_back(std::move(f));
  }
  return zip_write(files, what);
}

namespace {

std::unique_ptr<zip_t, ZipClose> open_npz(const std::string& path) {
  int err = 0;
  std::unique_ptr<zip_t, ZipClose> z(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err));
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    const std::string msg = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    fail(ErrorKind::io, "cannot read '", path, "' as an .npz (zip) archive: ", msg);
  }
  return z;
}

// Calls read(name without ".npy", member, its size, what) for each member.
template <class Read>
void for_each_member(zip_t* z, const std::string& path, Read&& read) {
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    MR_CHECK(zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st) == 0, io, "'", path,
             "': unreadable member");
    std::string name = st.name ? st.name : "";
    const std::string what = "'" + path + "' member '" + name + "'";
    MR_CHECK(st.size < (uint64_t{1} << 36), io, what, " is too large");
    std::unique_ptr<zip_file_t, ZipFileClose> f(
        zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0));
    MR_CHECK(f != nullptr, io, what, " cannot be opened: ", zip_strerror(z));
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
      name.resize(name.size() - 4);
    read(name, f.get(), static_cast<size_t>(st.size), what);
  }
}

}  // namespace

std::map<std::string, NpyArray> read_npz(const std::string& path) {
  auto z = open_npz(path);
  std::map<std::string, NpyArray> out;
  for_each_member(
      z.get(), path,
      [&](const std::string& name, zip_file_t* f, size_t size, const std::string& what) {
        std::vector<uint8_t> bytes(size);
        const zip_int64_t got = bytes.empty() ? 0 : zip_fread(f, bytes.data(), size);
        MR_CHECK(got == static_cast<zip_int64_t>(size), io, what, " is truncated or corrupt");
        out.emplace(name, parse_npy(bytes, what));
      });
  return out;
}

std::map<std::string, NpyHeader> read_npz_headers(const std::string& path) {
  auto z = open_npz(path);
  std::map<std::string, NpyHeader> out;
  for_each_member(
      z.get(), path,
      [&](const std::string& name, zip_file_t* f, size_t size, const std::string& what) {
        // The fixed part, then the rest of the header it declares: only
        // the header is inflated, never the data.
        std::vector<uint8_t> b(std::min<size_t>(size, 12));
        auto read = [&](size_t from) {
          const zip_int64_t got = zip_fread(f, b.data() + from, b.size() - from);
          MR_CHECK(got == static_cast<zip_int64_t>(b.size() - from), io, what,
                   " is truncated or corrupt");
        };
        if (!b.empty()) read(0);
        size_t start = 0;
        const size_t end = std::min(size, npy_header_end(b.data(), b.size(), what, start));
        if (end > b.size()) {
          const size_t had = b.size();
          b.resize(end);
          read(had);
        }
        NpyHeader h = parse_npy_header(b.data(), b.size(), what);
        check_npy_size(h, size, what);
        out.emplace(name, std::move(h));
      });
  return out;
}

}  // namespace mr
