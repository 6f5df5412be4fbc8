#include "io/idx.h"

#include <zlib.h>

#include <memory>

#include "core/error.h"

namespace mr {

namespace {

struct GzClose {
  void operator()(gzFile_s* f) const noexcept { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzClose>;

// Dimensions whose product exceeds this are rejected before any allocation.
constexpr int64_t kMaxValues = int64_t{1} << 34;

void read_exact(gzFile f, void* dst, size_t n, const std::string& path, const char* what) {
  size_t done = 0;
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(f, static_cast<char*>(dst) + done, chunk);
    if (got <= 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      fail(ErrorKind::io, "'", path, "' is truncated: ", what, " ends after ", done, " of ", n,
           " bytes", errnum < 0 ? std::string(" (") + msg + ")" : std::string());
    }
    done += static_cast<size_t>(got);
  }
}

// The dimensions in the header (f is at the start of the file).
std::vector<int64_t> read_header(gzFile f, const std::string& path, int64_t& total) {
  unsigned char magic[4];
  read_exact(f, magic, 4, path, "the header");
  MR_CHECK(magic[0] == 0 && magic[1] == 0, io, "'", path,
           "' is not an IDX file (bad magic number)");
  MR_CHECK(magic[2] == 0x08, io, "'", path, "' holds IDX type 0x", std::hex, int{magic[2]},
           "; only unsigned bytes (0x08) are supported");
  const int ndim = magic[3];
  MR_CHECK(ndim >= 1 && ndim <= 8, io, "'", path, "' declares ", ndim, " dimensions");
  std::vector<int64_t> dims;
  total = 1;
  for (int i = 0; i < ndim; ++i) {
    unsigned char b[4];
    read_exact(f, b, 4, path, "the header");
    const int64_t d = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
    MR_CHECK(d > 0, io, "'", path, "' declares an empty dimension");
    // Checked before multiplying, so the product cannot overflow.
    MR_CHECK(d <= kMaxValues / total, io, "'", path, "' declares absurd dimensions");
    total *= d;
    dims.push_back(d);
  }
  return dims;
}

GzFile open_idx(const std::string& path) {
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) fail(ErrorKind::io, "cannot open '", path, "'");
  return f;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  GzFile f = open_idx(path);
  IdxArray arr;
  int64_t total = 0;
  arr.dims = read_header(f.get(), path, total);
  arr.data.resize(static_cast<size_t>(total));
  read_exact(f.get(), arr.data.data(), arr.data.size(), path, "the data");
  unsigned char extra;
  MR_CHECK(gzread(f.get(), &extra, 1) == 0, io, "'", path, "' is longer than its header says");
  return arr;
}

std::vector<int64_t> read_idx_dims(const std::string& path) {
  GzFile f = open_idx(path);
  int64_t total = 0;
  return read_header(f.get(), path, total);
}

}  // namespace mr
