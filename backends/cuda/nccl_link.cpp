#include "backends/cuda/nccl_link.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/dynamic_library.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend {

namespace {

#define TAPESTRY_NCCL_STR2(x) #x
#define TAPESTRY_NCCL_STR(x) TAPESTRY_NCCL_STR2(x)

// The NCCL functions the link calls, bound from libnccl at first use.
struct NcclApi {
  std::string error; // why NCCL cannot be used; "" when every function is bound
  ncclResult_t (*getUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*commInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*commAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*commGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  ncclResult_t (*send)(const void*, std::size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void*, std::size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  const char* (*errorString)(ncclResult_t) = nullptr;
};

NcclApi load() {
  NcclApi api;
#ifdef TAPESTRY_NCCL_LIBRARY_DIR
  const char* dir = TAPESTRY_NCCL_LIBRARY_DIR;
#else
  const char* dir = nullptr;
#endif
  tapestry::cuda::DynamicLibrary lib({"libnccl.so." TAPESTRY_NCCL_STR(NCCL_MAJOR)}, dir);
  auto bind = [&](auto& fn, const char* symbol) { lib.bind(fn, symbol); };
  bind(api.getUniqueId, "ncclGetUniqueId");
  bind(api.commInitRank, "ncclCommInitRank");
  bind(api.commDestroy, "ncclCommDestroy");
  bind(api.commAbort, "ncclCommAbort");
  bind(api.commGetAsyncError, "ncclCommGetAsyncError");
  bind(api.send, "ncclSend");
  bind(api.recv, "ncclRecv");
  bind(api.errorString, "ncclGetErrorString");
  api.error = lib.error();
  return api;
}

const NcclApi& nccl() {
  static const NcclApi api = load();
  return api;
}

// Error "NCCL: WHAT: <NCCL's message> (code N)" unless success.
void check(ncclResult_t status, const std::string& what) {
  if (status != ncclSuccess) {
    throw Error("NCCL: " + what + ": " + nccl().errorString(status) + " (code " +
                std::to_string(static_cast<int>(status)) + ")");
  }
}

} // namespace

std::string ncclUnavailable() {
  return nccl().error;
}

struct NcclLink::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int gpu = 0;
  int rank = 0;
  std::vector<int> gpuOf; // per plan device

  void select() const {
    cuda::checkCuda(cudaSetDevice(gpu), "selecting GPU " + std::to_string(gpu));
  }

  // Polls the stream until the enqueued call is done: true; false once `stop`
  // is set (the communicator is aborted then, as its peer may never come).
  bool wait(const std::atomic<bool>& stop, const std::string& what) {
    auto pause = std::chrono::microseconds(2);
    for (;;) {
      const cudaError_t status = cudaStreamQuery(stream);
      if (status == cudaSuccess) {
        return true;
      }
      if (status != cudaErrorNotReady) {
        cuda::checkCuda(status, what);
      }
      ncclResult_t async = ncclSuccess;
      check(nccl().commGetAsyncError(comm, &async), what);
      if (async != ncclSuccess && async != ncclInProgress) {
        check(async, what);
      }
      if (stop.load(std::memory_order_acquire)) {
        nccl().commAbort(comm);
        comm = nullptr;
        return false;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(100));
    }
  }

  void usable(const std::string& what) const {
    if (comm == nullptr) {
      throw InternalError("NCCL: " + what + " after the communicator was aborted");
    }
  }
};

NcclLink::NcclLink(RankLink& link, const CudaBackend& backend, int device)
    : state_(std::make_unique<State>()), device_(device) {
  const NcclApi& api = nccl();
  if (!api.error.empty()) {
    throw Error("NCCL: " + api.error);
  }
  State& s = *state_;
  for (const cuda::DevicePlacement& p : backend.placements()) {
    s.gpuOf.push_back(p.gpu);
  }
  if (device < 0 || static_cast<std::size_t>(device) >= s.gpuOf.size()) {
    throw InternalError("NCCL link on plan device " + std::to_string(device) +
                        ", which the backend does not have");
  }
  s.gpu = s.gpuOf[static_cast<std::size_t>(device)];
  s.rank = link.rank();
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (link.rank() == 0) {
    check(api.getUniqueId(&id), "creating the communicator's unique id");
  }
  link.broadcast(std::as_writable_bytes(std::span<ncclUniqueId, 1>(&id, 1)), 0);
  s.select();
  cuda::checkCuda(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking),
                  "creating the NCCL stream on GPU " + std::to_string(s.gpu));
  check(api.commInitRank(&s.comm, link.ranks(), id, link.rank()),
        "rank " + std::to_string(link.rank()) + " joining the communicator of " +
            std::to_string(link.ranks()) + " ranks on GPU " + std::to_string(s.gpu));
}

NcclLink::~NcclLink() {
  // Errors here have nowhere to go (and the process may be exiting).
  State& s = *state_;
  cudaSetDevice(s.gpu);
  if (s.comm != nullptr) {
    nccl().commDestroy(s.comm);
  }
  if (s.stream != nullptr) {
    cudaStreamDestroy(s.stream);
  }
}

bool NcclLink::reaches(int device) const {
  return device >= 0 && static_cast<std::size_t>(device) < state_->gpuOf.size() &&
         state_->gpuOf[static_cast<std::size_t>(device)] == state_->gpu;
}

bool NcclLink::transfer(bool sending, int peer, const Buffer& block,
                        const std::atomic<bool>& stop) {
  State& s = *state_;
  const std::string what =
      "rank " + std::to_string(s.rank) + (sending ? " sending " : " receiving ") +
      std::to_string(block.byteSize()) + (sending ? " bytes to rank " : " bytes from rank ") +
      std::to_string(peer);
  s.usable(what);
  if (!reaches(block.device())) {
    throw InternalError("NCCL: " + what + (sending ? " from" : " into") +
                        " a buffer on plan device " + std::to_string(block.device()) +
                        ", not on the link's GPU");
  }
  s.select();
  const auto bytes = static_cast<std::size_t>(block.byteSize());
  check(sending ? nccl().send(block.data(), bytes, ncclUint8, peer, s.comm, s.stream)
                : nccl().recv(block.data(), bytes, ncclUint8, peer, s.comm, s.stream),
        what);
  return s.wait(stop, what);
}

bool NcclLink::send(int to, const Buffer& data, const std::atomic<bool>& stop) {
  return transfer(true, to, data, stop);
}

bool NcclLink::receive(int from, const Buffer& into, const std::atomic<bool>& stop) {
  return transfer(false, from, into, stop);
}

} // namespace tapestry::backend
