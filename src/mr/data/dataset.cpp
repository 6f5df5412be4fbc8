#include "data/dataset.h"

#include "core/error.h"

namespace mr {

DatasetPtr Dataset::with_input(DatasetPtr) const {
  fail(ErrorKind::internal, label(), " has no input to replace");
}

void Dataset::fingerprint(Hasher& h) const {
  h.str(label());
  if (auto in = input()) in->fingerprint(h);
}

uint64_t derive_key(uint64_t key, uint64_t rep) {
  uint64_t x = key * 0x9E3779B97F4A7C15ull + rep + 0x632BE59BD9B4E019ull;
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  return x;
}

int64_t total_memory_bytes(const Dataset& ds) {
  int64_t n = ds.memory_bytes();
  for (DatasetPtr in = ds.input(); in; in = in->input()) n += in->memory_bytes();
  return n;
}

}  // namespace mr
