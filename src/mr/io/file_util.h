// Whole-file reads and atomic whole-file writes.
//
// write_file_atomic() is the only way mirrored writes a file a user may rely
// on (checkpoints, .keras archives): the bytes go to a temporary file in the
// destination's directory, which is flushed and fsynced, renamed over the
// destination, and the directory is fsynced. A crash at any moment therefore
// leaves either the old file or the new one, never a torn one; on any failure
// the temporary file is removed and an existing destination is untouched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mr {

using Bytes = std::vector<uint8_t>;

// Temporary files are named "<dir>/.<name>.tmp-XXXXXX" (so a crash leaves
// them recognisable; see is_temp_name()).
void write_file_atomic(const std::string& path, const uint8_t* data, size_t size,
                       int chunk_delay_ms = 0);
inline void write_file_atomic(const std::string& path, const Bytes& bytes, int chunk_delay_ms = 0) {
  write_file_atomic(path, bytes.data(), bytes.size(), chunk_delay_ms);
}

// The whole file. Throws mr::Error (io) naming the file when it is missing,
// a directory, unreadable, or larger than max_bytes.
Bytes read_file(const std::string& path, uint64_t max_bytes = uint64_t{1} << 40);

// True for a file name that write_file_atomic() uses for its temporaries.
bool is_temp_name(const std::string& file_name);

}  // namespace mr
