// Dataset sources read straight from files, without an R copy: IDX files
// (MNIST's format) and the arrays of an .npz archive. Each file or array is
// one component, sliced along its first dimension like tensor_slices; uint8
// data stays in bytes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/sources.h"

namespace mr {

// One component per IDX file; all must have the same first dimension.
std::shared_ptr<const SourceData> idx_source(const std::vector<std::string>& paths);
// One component per key of the archive (in the order given).
std::shared_ptr<const SourceData> npz_source(const std::string& path,
                                             const std::vector<std::string>& keys);

}  // namespace mr
