// Cross-rank transfers of device memory through NCCL (docs/distributed.md):
// the executor's DeviceLink when the CUDA backend runs a plan over MPI ranks.
// Built only when CMake finds NCCL (TAPESTRY_HAVE_NCCL); libnccl is loaded on
// first use (dlopen), as cuBLASLt is, so the binary runs without it.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "backends/executor.hpp"

namespace tapestry::backend {

class CudaBackend;

// Why this process cannot use NCCL (libnccl.so.2 does not load, or lacks a
// function), or "" when it can.
std::string ncclUnavailable();

// One NCCL communicator over every rank of `link`, on the GPU of plan device
// `device` of `backend`, with a stream of its own. send and receive enqueue
// one ncclSend or ncclRecv of the whole buffer (bytes) on that stream and poll
// it until done, checking the communicator's asynchronous errors, so that a
// failure elsewhere on this rank (`stop`) aborts the communicator instead of
// waiting forever. Calls come from one thread at a time (the link thread).
class NcclLink final : public DeviceLink {
public:
  // A collective over every rank of `link` (all construct one, with the same
  // ranks): rank 0 makes the communicator's unique id, link.broadcast hands it
  // to the others, and each joins. Error (exit 1) when NCCL fails.
  NcclLink(RankLink& link, const CudaBackend& backend, int device);
  ~NcclLink() override;
  NcclLink(const NcclLink&) = delete;
  NcclLink& operator=(const NcclLink&) = delete;

  int device() const override { return device_; }
  bool reaches(int device) const override;
  bool send(int to, const Buffer& data, const std::atomic<bool>& stop) override;
  bool receive(int from, const Buffer& into, const std::atomic<bool>& stop) override;

private:
  // send (sending) or receive: one NCCL call on the link's stream, waited for.
  bool transfer(bool sending, int peer, const Buffer& block, const std::atomic<bool>& stop);

  struct State;
  std::unique_ptr<State> state_;
  int device_ = 0;
};

} // namespace tapestry::backend
