// The plan executor (SPEC §9): runs a sharded plan (core/plan) for real on a
// backend. Every device of the plan holds its own buffers (shard output tiles,
// partials, received transfer regions, resident inputs); transfers are region
// copies between them, shards run their kernel on views of those buffers, and
// reductions combine partials along the plan's binary trees.
//
// Scheduling: the plan's tasks (transfers, shards, reduction steps) are taken in
// the plan's submission order (the order the cost simulator replays them in);
// each task depends on the earlier tasks that write what it reads or writes, so
// the result equals the sequential replay. Devices become worker threads: each
// worker runs the tasks of its devices in submission order (a transfer runs on
// its destination's worker), waiting only for the tasks it depends on. With
// fewer workers than devices a worker serves several devices, and since every
// dependency points backwards in one global order no worker can wait forever.
//
// Memory: a buffer is allocated when its task starts (as the simulator counts
// it) and released right after its last use on that device, so the measured
// peak per device tracks the predicted one. Graph outputs are kept; at the end
// they are gathered into whole-tensor host buffers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.hpp"
#include "backends/link_schedule.hpp"
#include "core/cost/plan_file.hpp"
#include "core/cost/simulator.hpp"
#include "core/graph/graph.hpp"
#include "core/plan/plan.hpp"

namespace tapestry::backend {

// The processes of a distributed run (`mpirun -n K tapestry run|bench`,
// docs/distributed.md): each rank runs the tasks of the plan devices it holds,
// and the link carries the regions that cross ranks. backends/ never includes
// mpi.h: the MPI link (backends/mpi_link.hpp) implements this. Worker threads
// call send, receive and pending concurrently; the collectives are called by
// the thread that called execute, once every worker has stopped.
class RankLink {
public:
  virtual ~RankLink() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // The largest message tag the link carries.
  virtual int maxTag() const = 0;
  // Ranks (this one included) running on this rank's machine.
  virtual int ranksOnThisNode() const = 0;
  // Starts sending `data`'s elements (a host buffer) to rank `to` under `tag`
  // and returns at once; the link keeps the buffer until it has been sent.
  virtual void send(int to, int tag, Buffer data) = 0;
  // Receives the message from rank `from` under `tag` into `into` (exactly its
  // size), returning true once it has arrived, or false once `stop` is set
  // (a task of this rank failed: its peers will never send what it waits for).
  virtual bool receive(int from, int tag, std::span<std::byte> into,
                       const std::atomic<bool>& stop) = 0;
  // Waits until every message this rank sent has left.
  virtual void flush() = 0;
  // Collectives: every rank's `local`, by rank.
  virtual std::vector<std::vector<std::int64_t>>
  allgather(const std::vector<std::int64_t>& local) = 0;
  // Every rank waits for the others.
  virtual void barrier() = 0;
  // Every rank gets rank `root`'s `data` (the same size on every rank): a
  // collective. By default through allgather.
  virtual void broadcast(std::span<std::byte> data, int root);
  // Whether send and receive take device memory (a CUDA-aware MPI) as well as
  // host memory; the same answer on every rank is not guaranteed.
  virtual bool carriesDeviceMemory() const { return false; }
};

// What moves the bytes of a distributed run's cross-rank transfers
// (docs/distributed.md), chosen at run time.
enum class Transport : std::uint8_t {
  None,         // one process: no transfer crosses ranks
  Mpi,          // host buffers (the CPU backend) through the RankLink
  MpiStaged,    // device memory staged through host buffers, then the RankLink
  CudaAwareMpi, // device buffers handed to a CUDA-aware MPI directly
  Nccl,         // device buffers through NCCL (a DeviceLink)
};
// "none", "mpi", "mpi-host-staged", "cuda-aware-mpi", "nccl".
const char* transportName(Transport transport);

// Device memory between ranks (NCCL, backends/cuda/nccl_link.hpp): one
// point-to-point call at a time, from the executor's link thread only, in the
// order linkSchedule gives (every rank in the same order, so the calls pair).
class DeviceLink {
public:
  virtual ~DeviceLink() = default;
  // The plan device whose GPU the link runs on.
  virtual int device() const = 0;
  // Whether a buffer on plan device `device` can be sent or received in place
  // (it is on the link's GPU); otherwise it goes through one on device().
  virtual bool reaches(int device) const = 0;
  // Sends all of `data` (a dense device buffer) to rank `to`, or receives all
  // of `into` from rank `from`; returns true once done, or false once `stop`
  // is set (a task of this rank failed), leaving the link unusable.
  virtual bool send(int to, const Buffer& data, const std::atomic<bool>& stop) = 0;
  virtual bool receive(int from, const Buffer& into, const std::atomic<bool>& stop) = 0;
};

// Which rank runs each plan device (one entry per device, max(deviceCount, 1)
// of them), docs/distributed.md: the devices the plan uses, in order, split
// into `ranks` contiguous blocks as even as possible (the first ranks get one
// more); on a multi-node target with at least as many nodes as ranks, whole
// nodes instead (contiguous blocks of nodes), so a node's devices share a rank.
// Ranks past the used devices hold none. Unused devices go with the used device
// before them (rank 0 when there is none).
std::vector<int> deviceRanks(const plan::ShardPlan& p, const cost::Target& target, int ranks);
// The devices each rank holds (per rank, ascending), the plan's used devices only.
std::vector<std::vector<int>> rankDevices(const plan::ShardPlan& p,
                                          const std::vector<int>& deviceRank, int ranks);

struct ExecuteOptions {
  // Cap on worker threads; 0: one per device the plan uses, at most one per
  // hardware thread.
  int threads = 0;
  // CPU backend: OpenBLAS threads inside one matrix product; 0: the hardware
  // threads divided among the workers (at least 1).
  int blasThreads = 0;
  // A distributed run: this rank runs the tasks of the devices `deviceRank`
  // (deviceRanks) gives it; a transfer from another rank's device is received
  // from that rank, one to another rank's device is sent there once its source
  // is ready (tag: the transfer's index). At the end every rank gets the merged
  // statistics (each task's times from the rank that ran it; clocks started at
  // a barrier) and rank 0 alone the outputs (the others' tiles sent to it;
  // tags past the transfers'); the others' Execution::outputs are empty.
  RankLink* link = nullptr;
  std::vector<int> deviceRank = {};
  // Cross-rank transfers go through `deviceLink` (NCCL) when set, issued by
  // one link thread per rank (link_schedule.hpp; the driver sets it for the
  // CUDA backend only, tests on the CPU backend too); else through `link`: the
  // CPU backend's host buffers as they are, a device backend's device buffers
  // when `linkTakesDevice` (a CUDA-aware MPI on every rank), else staged
  // through host buffers.
  DeviceLink* deviceLink = nullptr;
  bool linkTakesDevice = false;
  // Keep the activations around convolutions channels last where the
  // backend runs them so (Backend::channelsLast); false: every region
  // row-major (the tests compare the two).
  bool channelsLast = true;
};

// Byte counts of the executor's own allocator accounting.
struct DeviceMemory {
  std::int64_t peakBytes = 0;      // most bytes live at once on the device
  std::int64_t allocatedBytes = 0; // every allocation over the run, summed
};

// When one task ran: seconds on the steady clock from the start of the run (the
// reference of ExecutionStats::wallSeconds), read on the worker thread that ran
// it, right after its dependencies were done and right after its work (before
// its buffers are released).
struct TaskTime {
  double start = 0;
  double end = 0;
  int worker = 0; // the worker thread (0 .. ExecutionStats::workers - 1)
  double seconds() const { return end - start; }
};

struct ExecutionStats {
  double wallSeconds = 0;            // the tasks, from the first start to the last end
  int workers = 0;                   // worker threads used (over every rank; link threads too)
  int blasThreads = 0;               // OpenBLAS threads per product (CPU backend), else 0
  std::vector<DeviceMemory> devices; // one per plan device (ShardPlan::deviceCount)
  std::size_t shards = 0;            // non-empty shards run
  std::size_t kernelCalls = 0;       // kernel invocations (a split shard makes several)
  std::size_t transfers = 0;
  std::size_t reductionSteps = 0;
  std::int64_t transferBytes = 0; // copied by transfers (the plan's transfer bytes)
  // A shard whose input selection spans several regions on its device is cut
  // into pieces that each read one region (along dims its IPFs keep separate),
  // each piece a kernel call writing its part of the shard's output tiles.
  std::size_t splitShards = 0;
  // Where no cut separates them, the regions are copied into one contiguous
  // scratch buffer for the call (counted in the device's memory too).
  std::size_t assembledSelections = 0;
  std::int64_t assembledBytes = 0;
  // Graph outputs gathered into host buffers after the tasks (not in wallSeconds).
  std::int64_t outputBytes = 0;
  // Shard output regions laid out channels last (ExecuteOptions::channelsLast),
  // over the whole plan (every rank decides alike).
  std::size_t channelsLastRegions = 0;
  // What moved the cross-rank transfers (None in one process).
  Transport transport = Transport::None;
  // Per task, what cost::Simulation predicts next to it (bench compares them):
  // every shard, [op][shard] as ShardPlan::ops[op].shards and Simulation::shards
  // (an empty shard too: it only allocates); every transfer, parallel to
  // ShardPlan::transfers and Simulation::transfers (a partial move included);
  // every reduction, parallel to ShardPlan::reductions and Simulation::reductions,
  // from the start of its first step (the move of a partial, or a combine) to the
  // end of its last combine, on the worker of its last combine (a reduction
  // without steps: its root shard's end, twice). Empty when the run failed.
  std::vector<std::vector<TaskTime>> shardTimes;
  std::vector<TaskTime> transferTimes;
  std::vector<TaskTime> reductionTimes;
};

struct Execution {
  TensorBuffers outputs; // every graph output: a host buffer over the whole tensor
  ExecutionStats stats;
};

// Runs plan `p` of graph `g` on `backend`. With `schedule` (the plan's
// simulation), workers take tasks in simulated start order and each allocation
// waits for the frees the simulation made before it, so that the measured peak
// per device stays within the predicted one; without, in submission order. `inputs` holds every
// graph input as a host (or backend) buffer over the whole tensor (Error "missing input tensor x"
// or a dtype/shape mismatch otherwise, exit 1). A failing kernel's Error is
// rethrown once every worker has stopped.
Execution execute(const graph::ExpandedGraph& g, const plan::ShardPlan& p, Backend& backend,
                  const TensorBuffers& inputs, const ExecuteOptions& options = {},
                  const cost::Simulation* schedule = nullptr);
inline Execution execute(const plan::LoadedPlan& loaded, Backend& backend,
                         const TensorBuffers& inputs, const ExecuteOptions& options = {}) {
  return execute(loaded.graph, loaded.plan, backend, inputs, options, &loaded.simulation);
}

namespace detail {
class Executor;
}

// A plan made ready to run many times (bench's repetitions, calibration):
// everything execute() works out before the first task (the task lists, the
// views, every shard's kernel calls checked and prepared, Backend::
// prepareKernel) is done once here, and each run() only runs the tasks. The
// graph, plan, backend and inputs must outlive it, and the inputs must not
// change while it lives where the graph marks them constant (a kernel may
// keep a packed copy of them). One run at a time.
class PreparedRun {
public:
  PreparedRun(const graph::ExpandedGraph& g, const plan::ShardPlan& p, Backend& backend,
              const TensorBuffers& inputs, const ExecuteOptions& options = {},
              const cost::Simulation* schedule = nullptr);
  PreparedRun(const plan::LoadedPlan& loaded, Backend& backend, const TensorBuffers& inputs,
              const ExecuteOptions& options = {})
      : PreparedRun(loaded.graph, loaded.plan, backend, inputs, options, &loaded.simulation) {}
  PreparedRun(const PreparedRun&) = delete;
  PreparedRun& operator=(const PreparedRun&) = delete;
  ~PreparedRun();
  Execution run();

private:
  std::unique_ptr<detail::Executor> executor_;
};

// What each rank of a distributed run with a device link runs, in order,
// without running it (tests): the tasks as the executor numbers them.
struct RankLists {
  std::vector<std::vector<std::uint32_t>> workers; // each worker thread's tasks
  std::vector<LinkOp> link;                        // the link thread's operations
};
struct DistributedSchedule {
  std::vector<std::vector<std::uint32_t>> deps; // per task, every task it waits for
  std::vector<std::uint32_t> order;             // the order every rank agrees on
  std::vector<RankLists> ranks;
};
DistributedSchedule distributedSchedule(const graph::ExpandedGraph& g, const plan::ShardPlan& p,
                                        const cost::Simulation* schedule,
                                        const std::vector<int>& deviceRank, int ranks, int threads);

// Hardware threads this process may run on (its CPU affinity), at least 1.
int usableHardwareThreads();

} // namespace tapestry::backend
