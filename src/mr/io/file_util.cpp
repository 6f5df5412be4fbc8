#include "io/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace mr {

namespace {

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Owns a file descriptor and, until release(), the temporary file's name:
// destruction closes the descriptor and unlinks the temporary.
class TempFile {
 public:
  explicit TempFile(std::string templ) : name_(std::move(templ)) {
    std::vector<char> buf(name_.begin(), name_.end());
    buf.push_back('\0');
    fd_ = ::mkstemp(buf.data());
    if (fd_ < 0) {
      const int err = errno;
      name_.clear();
      errno = err;
      return;
    }
    name_ = buf.data();
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!name_.empty()) ::unlink(name_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  // Closes the descriptor; returns 0 or the errno of close().
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? 0 : errno;
  }
  void release() { name_.clear(); }

 private:
  std::string name_;
  int fd_ = -1;
};

[[noreturn]] void io_fail(const std::string& path, const char* what, int err) {
  fail(ErrorKind::io, "cannot write '", path, "': ", what, ": ", std::strerror(err));
}

}  // namespace

bool is_temp_name(const std::string& file_name) {
  return file_name.size() > 1 && file_name[0] == '.' &&
         file_name.find(".tmp-") != std::string::npos;
}

void write_file_atomic(const std::string& path, const uint8_t* data, size_t size,
                       int chunk_delay_ms) {
  MR_CHECK(!path.empty(), value, "empty file path");
  const std::string dir = dir_of(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    fail(ErrorKind::io, "cannot write '", path, "': it is a directory, expected a file");
  if (::stat(dir.c_str(), &st) != 0) io_fail(path, "its directory does not exist", errno);
  if (!S_ISDIR(st.st_mode))
    fail(ErrorKind::io, "cannot write '", path, "': '", dir, "' is not a directory");

  TempFile tmp(dir + "/." + base_of(path) + ".tmp-XXXXXX");
  if (tmp.fd() < 0) io_fail(path, "cannot create a temporary file in its directory", errno);
  // mkstemp creates 0600; a checkpoint should be as readable as other files.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(tmp.fd(), 0666 & ~mask);

  constexpr size_t kChunk = size_t{1} << 20;
  size_t done = 0;
  while (done < size) {
    const size_t want = std::min(kChunk, size - done);
    const ssize_t n = ::write(tmp.fd(), data + done, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      io_fail(path, "write failed", errno);
    }
    done += static_cast<size_t>(n);
    if (chunk_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(chunk_delay_ms));
  }
  if (::fsync(tmp.fd()) != 0) io_fail(path, "fsync failed", errno);
  if (const int err = tmp.close()) io_fail(path, "close failed", err);
  if (::rename(tmp.name().c_str(), path.c_str()) != 0) io_fail(path, "rename failed", errno);
  tmp.release();  // the name now belongs to the destination
  // The rename is durable only once the directory entry is on disk.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

Bytes read_file(const std::string& path, uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail(ErrorKind::io, "cannot read '", path, "': ", std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    fail(ErrorKind::io, "cannot read '", path, "': it is a directory, expected a file");
  if (!S_ISREG(st.st_mode)) fail(ErrorKind::io, "cannot read '", path, "': not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    fail(ErrorKind::io, "cannot read '", path, "': ", size, " bytes exceeds the limit of ",
         max_bytes);
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail(ErrorKind::io, "cannot read '", path, "': ", std::strerror(errno));
  Bytes out(static_cast<size_t>(size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      ::close(fd);
      if (err != 0) fail(ErrorKind::io, "cannot read '", path, "': ", std::strerror(err));
      fail(ErrorKind::io, "cannot read '", path, "': the file shrank while being read");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return out;
}

}  // namespace mr
