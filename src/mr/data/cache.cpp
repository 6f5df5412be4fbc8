#include "data/cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace mr {

namespace {

constexpr char kMagic[8] = {'M', 'R', 'C', 'A', 'C', 'H', 'E', '\0'};
constexpr char kEndMagic[8] = {'M', 'R', 'C', 'E', 'N', 'D', '\0', '\0'};
constexpr uint32_t kVersion = 1;
constexpr int64_t kHeaderBytes = 24;  // magic, version, reserved, fingerprint
constexpr int64_t kTailBytes = 24;    // element count, footer offset, end magic

int64_t element_bytes(const Element& e) {
  int64_t n = 0;
  for (const Component& c : e.parts)
    n += static_cast<int64_t>(c.values.capacity() * sizeof(float) + c.shape.capacity() * 8);
  return n;
}

// ---- in memory -----------------------------------------------------------

struct MemoryStore {
  std::mutex mu;
  bool complete = false;  // once true, `elements` never changes again
  std::vector<Element> elements;
  int64_t bytes = 0;
};

class MemoryReplay final : public Iterator {
 public:
  explicit MemoryReplay(std::shared_ptr<const MemoryStore> store) : store_(std::move(store)) {}
  bool next(Element& out) override {
    if (pos_ >= store_->elements.size()) return false;
    out = store_->elements[pos_++];
    return true;
  }

 private:
  std::shared_ptr<const MemoryStore> store_;
  size_t pos_ = 0;
};

class MemoryRecord final : public Iterator {
 public:
  MemoryRecord(std::unique_ptr<Iterator> in, std::shared_ptr<MemoryStore> store)
      : in_(std::move(in)), store_(std::move(store)) {}
  bool next(Element& out) override {
    if (done_) return false;
    if (in_->next(out)) {
      bytes_ += element_bytes(out);
      recorded_.push_back(out);
      return true;
    }
    done_ = true;
    std::lock_guard<std::mutex> lock(store_->mu);
    if (!store_->complete) {
      store_->elements = std::move(recorded_);
      store_->bytes = bytes_;
      store_->complete = true;
    }
    return false;
  }

 private:
  std::unique_ptr<Iterator> in_;
  std::shared_ptr<MemoryStore> store_;
  std::vector<Element> recorded_;
  int64_t bytes_ = 0;
  bool done_ = false;
};

// ---- in a file -----------------------------------------------------------

struct FileClose {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileClose>;

class FileReplay final : public Iterator {
 public:
  FileReplay(const std::string& path, uint64_t fingerprint) : path_(path) {
    f_.reset(std::fopen(path.c_str(), "rb"));
    if (!f_) fail(ErrorKind::io, "dataset_cache(): cannot open the cache file '", path, "'");
    std::setvbuf(f_.get(), nullptr, _IOFBF, 1 << 20);
    char magic[8];
    uint32_t version = 0, reserved = 0;
    uint64_t fp = 0;
    if (std::fread(magic, 1, 8, f_.get()) != 8 || std::memcmp(magic, kMagic, 8) != 0)
      fail(ErrorKind::io, "dataset_cache(): '", path,
           "' is not a mirrored cache file (bad magic string); delete it or choose another "
           "filename");
    read(&version, 4, "the header");
    read(&reserved, 4, "the header");
    read(&fp, 8, "the header");
    MR_CHECK(version == kVersion, io, "dataset_cache(): '", path, "' has cache format version ",
             version, "; this mirrored writes version ", kVersion,
             ". Delete the file to rebuild it");
    MR_CHECK(fp == fingerprint, io, "dataset_cache(): '", path,
             "' holds the cache of another dataset (its fingerprint differs from this dataset's "
             "definition); delete it or choose another filename");
    MR_CHECK(std::fseek(f_.get(), 0, SEEK_END) == 0, io, "dataset_cache(): cannot seek in '", path,
             "'");
    const long size = std::ftell(f_.get());
    char end[8] = {};
    uint64_t footer = 0;
    bool ok = size >= kHeaderBytes + kTailBytes &&
              std::fseek(f_.get(), size - kTailBytes, SEEK_SET) == 0 &&
              std::fread(&count_, 8, 1, f_.get()) == 1 &&
              std::fread(&footer, 8, 1, f_.get()) == 1 && std::fread(end, 1, 8, f_.get()) == 8 &&
              std::memcmp(end, kEndMagic, 8) == 0 &&
              footer >= static_cast<uint64_t>(kHeaderBytes) &&
              footer <= static_cast<uint64_t>(size - kTailBytes);
    if (!ok)
      fail(
          ErrorKind::io, "dataset_cache(): '", path,
          "' is truncated (no end marker): it was not written completely; delete it to rebuild it");
    footer_ = static_cast<int64_t>(footer);
    // Names, stored in the footer because the writer learns them from the first element.
    std::fseek(f_.get(), static_cast<long>(footer_), SEEK_SET);
    uint32_t n_names = 0;
    read(&n_names, 4, "the footer");
    if (n_names > 0) {
      auto names = std::make_shared<std::vector<std::string>>();
      for (uint32_t i = 0; i < n_names; ++i) {
        uint32_t len = 0;
        read(&len, 4, "the footer");
        MR_CHECK(len < (1u << 20), io, "dataset_cache(): '", path, "' is corrupt (a name of ", len,
                 " bytes)");
        std::string s(len, '\0');
        read(&s[0], len, "the footer");
        names->push_back(std::move(s));
      }
      names_ = std::move(names);
    }
    std::fseek(f_.get(), kHeaderBytes, SEEK_SET);
  }

  bool next(Element& out) override {
    if (done_ >= count_) return false;
    uint32_t n = 0;
    read(&n, 4, "an element");
    MR_CHECK(n < (1u << 16), io, "dataset_cache(): '", path_, "' is corrupt (", n, " components)");
    out.parts.resize(n);
    out.names = names_;
    for (Component& c : out.parts) {
      uint8_t head[2];
      read(head, 2, "an element");
      MR_CHECK(head[0] <= 2 && head[1] <= 32, io, "dataset_cache(): '", path_, "' is corrupt");
      c.rtype = static_cast<RType>(head[0]);
      c.shape.resize(head[1]);
      if (head[1]) read(c.shape.data(), 8 * head[1], "an element");
      int64_t total = 1;
      for (int64_t d : c.shape) {
        MR_CHECK(d >= 0 && d < (int64_t{1} << 40) && (d == 0 || total <= (int64_t{1} << 40) / d),
                 io, "dataset_cache(): '", path_, "' is corrupt (bad shape)");
        total *= d;
      }
      c.values.resize(static_cast<size_t>(total));
      if (total) read(c.values.data(), static_cast<size_t>(total) * sizeof(float), "an element");
    }
    ++done_;
    MR_CHECK(done_ < count_ || std::ftell(f_.get()) == footer_, io, "dataset_cache(): '", path_,
             "' is corrupt (its elements do not end where its footer starts)");
    return true;
  }

 private:
  void read(void* dst, size_t n, const char* what) {
    if (std::fread(dst, 1, n, f_.get()) != n)
      fail(ErrorKind::io, "dataset_cache(): '", path_, "' is truncated (in ", what, ")");
  }
  std::string path_;
  File f_;
  uint64_t count_ = 0, done_ = 0;
  int64_t footer_ = 0;
  Names names_;
};

class FileRecord final : public Iterator {
 public:
  FileRecord(std::unique_ptr<Iterator> in, std::string path, uint64_t fingerprint)
      : in_(std::move(in)), path_(std::move(path)) {
    std::ostringstream tmp;
    tmp << path_ << ".tmp-" << ::getpid() << "-" << reinterpret_cast<uintptr_t>(this);
    tmp_ = tmp.str();
    f_.reset(std::fopen(tmp_.c_str(), "wb"));
    if (!f_)
      fail(ErrorKind::io, "dataset_cache(): cannot create '", tmp_, "': ", std::strerror(errno));
    std::setvbuf(f_.get(), nullptr, _IOFBF, 1 << 20);
    const uint32_t version = kVersion, reserved = 0;
    write(kMagic, 8);
    write(&version, 4);
    write(&reserved, 4);
    write(&fingerprint, 8);
  }
  ~FileRecord() override {
    if (f_) {  // the pass did not complete: the partial file is never used
      f_.reset();
      std::remove(tmp_.c_str());
    }
  }

  bool next(Element& out) override {
    if (!f_) return false;
    if (in_->next(out)) {
      if (count_ == 0) names_ = out.names;
      const auto n = static_cast<uint32_t>(out.parts.size());
      write(&n, 4);
      for (const Component& c : out.parts) {
        const uint8_t head[2] = {static_cast<uint8_t>(c.rtype),
                                 static_cast<uint8_t>(c.shape.size())};
        write(head, 2);
        if (!c.shape.empty()) write(c.shape.data(), 8 * c.shape.size());
        if (!c.values.empty()) write(c.values.data(), c.values.size() * sizeof(float));
      }
      ++count_;
      return true;
    }
    finish();
    return false;
  }

 private:
  void write(const void* src, size_t n) {
    if (std::fwrite(src, 1, n, f_.get()) != n)
      fail(ErrorKind::io, "dataset_cache(): writing '", tmp_, "' failed: ", std::strerror(errno));
  }
  void finish() {
    const uint64_t footer = static_cast<uint64_t>(std::ftell(f_.get()));
    const uint32_t n_names = names_ ? static_cast<uint32_t>(names_->size()) : 0;
    write(&n_names, 4);
    for (uint32_t i = 0; i < n_names; ++i) {
      const std::string& s = (*names_)[i];
      const auto len = static_cast<uint32_t>(s.size());
      write(&len, 4);
      write(s.data(), len);
    }
    write(&count_, 8);
    write(&footer, 8);
    write(kEndMagic, 8);
    const bool flushed = std::fflush(f_.get()) == 0 && ::fsync(::fileno(f_.get())) == 0;
    std::FILE* raw = f_.release();
    const bool closed = std::fclose(raw) == 0;
    if (!flushed || !closed || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp_.c_str());
      fail(ErrorKind::io, "dataset_cache(): could not complete the cache file '", path_,
           "': ", std::strerror(err));
    }
  }

  std::unique_ptr<Iterator> in_;
  std::string path_, tmp_;
  File f_;
  uint64_t count_ = 0;
  Names names_;
};

bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

class CacheDataset final : public Dataset {
 public:
  CacheDataset(DatasetPtr in, std::string filename)
      : input_(std::move(in)),
        filename_(std::move(filename)),
        store_(std::make_shared<MemoryStore>()) {
    MR_CHECK(input_ != nullptr, internal, "cache needs an input");
  }
  DatasetPtr input() const override { return input_; }
  ElementSpec spec() const override { return input_->spec(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string label() const override {
    return filename_.empty() ? "cache(filename = \"\")" : "cache(filename = \"" + filename_ + "\")";
  }
  // A fresh cache (nothing recorded) over the new input.
  DatasetPtr with_input(DatasetPtr in) const override {
    return std::make_shared<CacheDataset>(std::move(in), filename_);
  }
  std::string cache_file() const override { return filename_; }
  int64_t memory_bytes() const override {
    std::lock_guard<std::mutex> lock(store_->mu);
    return store_->complete ? store_->bytes : 0;
  }

  std::unique_ptr<Iterator> iterate(uint64_t key) const override {
    if (filename_.empty()) {
      {
        std::lock_guard<std::mutex> lock(store_->mu);
        if (store_->complete) return std::make_unique<MemoryReplay>(store_);
      }
      return std::make_unique<MemoryRecord>(input_->iterate(key), store_);
    }
    Hasher h;
    h.str("mirrored dataset cache");
    input_->fingerprint(h);
    if (file_exists(filename_)) return std::make_unique<FileReplay>(filename_, h.value());
    return std::make_unique<FileRecord>(input_->iterate(key), filename_, h.value());
  }

 private:
  DatasetPtr input_;
  std::string filename_;
  std::shared_ptr<MemoryStore> store_;
};

}  // namespace

DatasetPtr make_cache(DatasetPtr input, const std::string& filename) {
  return std::make_shared<CacheDataset>(std::move(input), filename);
}

}  // namespace mr
