// CPU-only build: the GPU communicators do not exist (CUDA builds compile
// dist/comm_nccl.cu and dist/comm_peer.cu instead of this file).
#include "core/error.h"
#include "dist/communicator.h"

namespace mr {

std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<int>&, double) {
  fail(ErrorKind::device, "this build of mirrored has no CUDA, so no NCCL all-reduce");
}

std::unique_ptr<Communicator> make_peer_communicator(const std::vector<int>&, double) {
  fail(ErrorKind::device, "this build of mirrored has no CUDA, so no GPU all-reduce");
}

std::unique_ptr<Communicator> make_nccl_communicator_ranks(const std::vector<int>&, double, int,
                                                           int, const std::string&) {
  fail(ErrorKind::device, "this build of mirrored has no CUDA, so no NCCL all-reduce");
}

std::string nccl_unique_id() {
  fail(ErrorKind::device, "this build of mirrored has no CUDA, so no NCCL all-reduce");
}

}  // namespace mr
