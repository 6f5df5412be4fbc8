#include "io/zip_archive.h"

#include <zip.h>

#include <cstring>

#include "core/error.h"

namespace mr {

namespace {

std::string zip_message(zip_error_t* err) {
  const char* s = zip_error_strerror(err);
  return s ? s : "unknown libzip error";
}

std::string archive_message(zip_t* za) { return zip_message(zip_get_error(za)); }

// 1980-01-01 00:00 local time: what Python's zipfile writes for members
// without a time, and the earliest time a zip entry can hold.
std::time_t zip_epoch() {
  std::tm t{};
  t.tm_year = 80;
  t.tm_mon = 0;
  t.tm_mday = 1;
  t.tm_isdst = -1;
  return std::mktime(&t);
}

}  // namespace

void check_member_name(const std::string& name, const std::string& what) {
  auto bad = [&](const char* why) {
    fail(ErrorKind::io, what, ": unsafe member name '", name, "' (", why, ")");
  };
  if (name.empty()) bad("empty");
  if (name.size() > 4096) bad("too long");
  if (name.find('\0') != std::string::npos) bad("NUL byte");
  if (name.find('\\') != std::string::npos) bad("backslash");
  if (name[0] == '/') bad("absolute path");
  if (name.size() >= 2 && name[1] == ':') bad("drive letter");
  size_t start = 0;
  for (;;) {
    const size_t slash = name.find('/', start);
    const std::string part =
        name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part == "..") bad("climbs out of the directory");
    if (part == ".") bad("'.' component");
    if (part.empty() && slash != std::string::npos) bad("empty component");
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
}

Bytes zip_write(const std::vector<ZipMember>& members, const std::string& what) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(nullptr, 0, 0, &err);
  if (!src) fail(ErrorKind::io, what, ": cannot create the archive: ", zip_message(&err));
  zip_t* za = zip_open_from_source(src, ZIP_TRUNCATE, &err);
  if (!za) {
    zip_source_free(src);
    fail(ErrorKind::io, what, ": cannot create the archive: ", zip_message(&err));
  }
  zip_source_keep(src);  // read the result back after zip_close()
  auto abort_with = [&](const std::string& msg) {
    zip_discard(za);
    zip_source_free(src);
    fail(ErrorKind::io, what, ": ", msg);
  };
  const std::time_t epoch = zip_epoch();
  for (const ZipMember& m : members) {
    check_member_name(m.name, what);
    // The data outlives zip_close(): libzip reads it then (freep = 0).
    zip_source_t* s = zip_source_buffer(za, m.data.data(), m.data.size(), 0);
    if (!s) abort_with("cannot add '" + m.name + "': " + archive_message(za));
    const zip_int64_t idx = zip_file_add(za, m.name.c_str(), s, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(s);
      abort_with("cannot add '" + m.name + "': " + archive_message(za));
    }
    const auto i = static_cast<zip_uint64_t>(idx);
    if (zip_set_file_compression(za, i, ZIP_CM_STORE, 0) != 0 ||
        zip_file_set_mtime(za, i, m.mtime == 0 ? epoch : m.mtime, 0) != 0)
      abort_with("cannot set up '" + m.name + "': " + archive_message(za));
  }
  if (zip_close(za) != 0) abort_with("cannot write the archive: " + archive_message(za));

  Bytes out;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_source_stat(src, &st) != 0 || zip_source_open(src) != 0) {
    zip_source_free(src);
    fail(ErrorKind::io, what, ": cannot read the archive back");
  }
  out.resize(static_cast<size_t>(st.size));
  const zip_int64_t n = zip_source_read(src, out.data(), out.size());
  zip_source_close(src);
  zip_source_free(src);
  if (n != static_cast<zip_int64_t>(out.size()))
    fail(ErrorKind::io, what, ": cannot read the archive back");
  return out;
}

struct ZipReader::Impl {
  std::shared_ptr<const Bytes> bytes;
  zip_t* za = nullptr;
  ~Impl() {
    if (za) zip_discard(za);
  }
};

ZipReader::ZipReader(std::shared_ptr<const Bytes> bytes, std::string what, ZipLimits limits)
    : impl_(std::make_unique<Impl>()), what_(std::move(what)), limits_(limits) {
  impl_->bytes = std::move(bytes);
  const Bytes& b = *impl_->bytes;
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(b.data(), b.size(), 0, &err);
  if (!src) fail(ErrorKind::io, what_, ": cannot open the archive: ", zip_message(&err));
  impl_->za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!impl_->za) {
    zip_source_free(src);
    fail(ErrorKind::io, what_,
         ": not a valid zip archive (truncated or corrupted?): ", zip_message(&err));
  }
  const zip_int64_t n = zip_get_num_entries(impl_->za, 0);
  if (n < 0 || static_cast<uint64_t>(n) > limits_.max_members)
    fail(ErrorKind::io, what_, ": bad number of members (", n, ")");
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(impl_->za, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
    if (!name) fail(ErrorKind::io, what_, ": unreadable member name: ", archive_message(impl_->za));
    check_member_name(name, what_);
    for (const auto& seen : names_)
      if (seen == name) fail(ErrorKind::io, what_, ": member '", name, "' appears twice");
    names_.emplace_back(name);
  }
}

ZipReader::~ZipReader() = default;

bool ZipReader::has(const std::string& name) const {
  for (const auto& n : names_)
    if (n == name) return true;
  return false;
}

Bytes ZipReader::read(const std::string& name) const {
  zip_stat_t st;
  zip_stat_init(&st);
  if (!has(name) || zip_stat(impl_->za, name.c_str(), ZIP_FL_ENC_RAW, &st) != 0)
    fail(ErrorKind::io, what_, ": has no member '", name, "'");
  if (!(st.valid & ZIP_STAT_SIZE)) fail(ErrorKind::io, what_, ": member '", name, "' has no size");
  // The declared size is bounded twice: by the limit and by the archive's
  // own length (members are stored, so none can be larger than the file).
  if (st.size > limits_.max_member_bytes ||
      ((st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE &&
       st.size > impl_->bytes->size()))
    fail(ErrorKind::io, what_, ": member '", name, "' declares ", st.size,
         " bytes, more than the limit");
  zip_file_t* f = zip_fopen(impl_->za, name.c_str(), ZIP_FL_ENC_RAW);
  if (!f)
    fail(ErrorKind::io, what_, ": cannot open member '", name, "': ", archive_message(impl_->za));
  Bytes out(static_cast<size_t>(st.size));
  const zip_int64_t got = zip_fread(f, out.data(), out.size());
  // A further read reaches the end of the member, where libzip checks the CRC.
  uint8_t extra = 0;
  const zip_int64_t tail =
      got == static_cast<zip_int64_t>(out.size()) ? zip_fread(f, &extra, 1) : -1;
  std::string msg = zip_message(zip_file_get_error(f));
  zip_fclose(f);
  if (got != static_cast<zip_int64_t>(out.size()) || tail != 0)
    fail(ErrorKind::io, what_, ": member '", name, "' is damaged (", msg, ")");
  return out;
}

}  // namespace mr
