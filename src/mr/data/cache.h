// dataset_cache(): the first complete pass is recorded, later passes replay it.
//
// In memory (filename empty): a pass records into its own list and publishes
// it only when its input ends, so a pass cut short (take(), an interrupted
// epoch) never leaves a partial cache behind.
//
// In a file: the first pass writes `<filename>.tmp-<pid>-<n>` and renames it
// to `filename` only after writing the footer. The file starts with a magic
// string, a format version and the fingerprint of the cached dataset's
// definition (its transforms and a hash of its source arrays); it ends with
// the element count and an end marker. A file with another magic, another
// fingerprint (another dataset) or no end marker (truncated) is rejected with
// an io error rather than silently replayed or overwritten.
#pragma once

#include <string>

#include "data/dataset.h"

namespace mr {

DatasetPtr make_cache(DatasetPtr input, const std::string& filename);

}  // namespace mr
