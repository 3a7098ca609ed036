// Internal to the executor (executor.cpp runs the tasks, executor_tasks.cpp
// turns a plan into slots and tasks, executor_cut.cpp cuts shards into kernel
// calls, executor_ranks.cpp does what distributed runs add): the records they
// share and the Executor itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/executor.hpp"
#include "backends/worker_pool.hpp"

namespace tapestry::backend::detail {

using u32 = std::uint32_t;
constexpr u32 kNone = std::numeric_limits<u32>::max();

// One region a device holds during the run: a shard's output tile (or partial),
// a transfer's arrival, or a resident graph input. Numbered as plan::PlanTasks
// numbers its buffers: tiles shard by shard, then transfers, then residents.
struct Slot {
  std::size_t tensor = 0;
  DType dtype = DType::Float32;
  ZRange region;
  int device = 0;
  bool keep = false; // a graph output: gathered at the end, never released
  int uses = 0;      // tasks that read it after it is made
  // Laid out channels last (channelsLastStrides) instead of row-major
  // (chooseLayouts).
  bool channelsLast = false;
};

// Where a prepared call's view finds its data at run time.
struct ViewSource {
  enum class Kind : std::uint8_t { Absent, Slot, Scratch };
  Kind kind = Kind::Absent;
  u32 index = 0; // Slot: the slot; Scratch: the piece's assembled selection
};

// One kernel call of a shard (a piece of its index range, see cutShard),
// checked and prepared once (Backend::prepareKernel). At run time only the
// views' data pointers are filled in, from their sources.
struct PreparedPiece {
  ZRange index;
  std::vector<PortViews> inputs;         // parallel to op.inputs
  std::vector<PortViews> outputs;        // parallel to op.outputs
  std::vector<ViewSource> inputSources;  // one per input view, port by port
  std::vector<ViewSource> outputSources; // one per output view, port by port
  // Selections spanning several regions that no cut separates: copied into a
  // scratch buffer over `slot.region` before the call, zero-filled first
  // where the parts leave some of it uncovered.
  struct Assembly {
    Slot slot;
    std::vector<u32> parts;
    bool zero = true;
    std::vector<std::int64_t> strides; // channels last: the call's view's (else empty)
  };
  std::vector<Assembly> scratch;
  std::unique_ptr<PreparedKernel> kernel; // null: an empty index, nothing to run
};

struct PreparedShard {
  std::vector<PreparedPiece> pieces;
};

struct Task {
  enum class Kind : std::uint8_t { Resident, Transfer, Shard, Step };
  Kind kind = Kind::Shard;
  std::size_t a = 0;        // Resident: resident; Transfer: transfer; Shard: op; Step: reduction
  std::size_t b = 0;        // Shard: shard; Step: step
  int device = 0;           // where it runs and its result lives
  std::vector<u32> deps;    // earlier tasks it must wait for
  std::vector<u32> reads;   // slots it reads (each use is released after the task)
  std::vector<u32> creates; // slots it allocates and fills
};

struct DeviceCounters {
  std::atomic<std::int64_t> live{0};
  std::atomic<std::int64_t> peak{0};
  std::atomic<std::int64_t> allocated{0};
};

// Index dims along which a shard can be cut into separate kernel calls (see
// executor_cut.cpp).
std::vector<char> separableDims(const graph::Operation& op);
bool coversExactly(const std::vector<Slot>& slots, const std::vector<u32>& parts,
                   const ZRange& range);
// The regions (slots) among `reads` holding parts of `range` of `tensor`, and
// the first that holds all of it (kNone when none does).
u32 findParts(const std::vector<Slot>& slots, const std::vector<u32>& reads, std::size_t tensor,
              const ZRange& range, std::vector<u32>* parts);
// The pieces of a shard's index range that each read one region per input
// selection (executor_cut.cpp).
std::vector<ZRange> cutShard(const graph::Operation& op, const plan::Shard& shard,
                             const std::vector<Slot>& slots, const std::vector<u32>& reads,
                             const std::vector<char>& separable);

// The plan's devices (this rank's) spread over the workers, and each worker's
// tasks in the order it takes them (executor_order.cpp).
// With a device link, the cross-rank transfers are the link thread's, in the
// same order (link_schedule.hpp).
struct WorkerLists {
  std::vector<int> devices; // the devices with a task here, ascending
  int cores = 1;            // the hardware threads this process may use
  int workers = 1;
  std::vector<std::vector<u32>> lists;
  std::vector<LinkOp> link; // the link thread's operations (a device link only)
};

class Executor {
public:
  // Without `inputs` (null) the executor only plans (lists), it cannot run.
  Executor(const graph::ExpandedGraph& g, const plan::ShardPlan& p, Backend& backend,
           const TensorBuffers* inputs);

  // Everything a run needs that does not change between runs: the roles and
  // worker lists, the slots' views, and every shard's kernel calls prepared.
  // Once per executor; then runOnce() as often as wanted.
  void setup(const ExecuteOptions& options, const cost::Simulation* schedule);
  Execution runOnce();
  Execution run(const ExecuteOptions& options, const cost::Simulation* schedule) {
    setup(options, schedule);
    return runOnce();
  }
  // What rank `rank` would run with a device link (distributedSchedule): its
  // lists, every task's dependencies before they are cut to this rank's, and
  // the order every rank agrees on.
  struct Planned {
    WorkerLists lists;
    std::vector<std::vector<u32>> deps;
    std::vector<u32> order;
  };
  Planned plannedLists(int rank, const std::vector<int>& deviceRank, int threads,
                       const cost::Simulation* schedule);

  // What a task is on this rank of a distributed run (ExecuteOptions::link):
  // run here; the send half of a transfer to another rank's device (on the
  // source's device); the receive half of one from another rank's device; or
  // another rank's task. Without a link every task runs here.
  enum class Role : std::uint8_t { Run, Send, Receive, Elsewhere };

private:
  // ---- setup
  void bindInputs(const TensorBuffers* inputs);
  void makeSlots();
  void makeTasks();
  u32 elementOf(std::size_t op, std::size_t tensor) const;
  u32 tile(std::size_t op, std::size_t shard, std::size_t tensor) const {
    return tileBase_[op] + static_cast<u32>(shard) * outCount_[op] + elementOf(op, tensor);
  }
  u32 root(std::size_t reduction) const {
    const plan::Reduction& r = p_.reductions[reduction];
    return tile(r.op, r.shards[0], r.tensor);
  }
  u32 slotOf(const plan::Source& s) const;
  void submit(Task task, std::vector<u32> writes);
  void submitTransfer(std::size_t i);
  bool matches(const cost::Simulation& sim) const;
  std::vector<u32> order(const cost::Simulation* sim);
  // Each worker's tasks in `order`, at most `threads` workers (0: one per
  // device, at most `cores`); the cross-rank transfers on the link thread
  // when `linkThread`.
  WorkerLists workerLists(const std::vector<u32>& order, int threads, int cores, bool linkThread);
  // The hardware threads this rank may use (its share when ranks share a machine).
  int rankCores() const;

  // ---- distributed runs
  WorkerLists prepare(const ExecuteOptions& options, const cost::Simulation* schedule);
  // Roles for rank `me` (deviceRank: per plan device; empty: one process).
  void assignRoles(int me, const std::vector<int>& deviceRank);
  int rankOf(int device) const { return deviceRank_[static_cast<std::size_t>(device)]; }
  int placeOf(u32 t) const; // the device whose worker runs task t here
  void sendTransfer(const Task& task);
  void receiveTransfer(const Task& task);
  // The cross-rank transfers in `order` and which rank each leaves and reaches.
  std::vector<CrossRankTransfer> crossRankTransfers(const std::vector<u32>& order) const;
  // Every rank's statistics and task times merged (each task's from the rank
  // of its device); wall time to the last rank's end. `start`: this rank's
  // clock at the start of its tasks (Backend::now()).
  void mergeStats(ExecutionStats& stats, std::vector<TaskTime>& times, double start) const;

  // ---- preparing (setup)
  // Whether slot s reads a graph input in place (the CPU backend's host
  // inputs: residents and transfers from the host are views, not copies).
  bool aliasesInput(u32 s) const;
  void makeSlotViews();
  // Marks the shard output tiles of the tensors the backend keeps channels
  // last (Backend::channelsLast): 4-d float32 or bfloat16 tensors between
  // operations, every port that reads or writes them taking the layout, in a
  // group of such tensors (linked through the operations) that a preferring
  // port reads or writes; their transfers' arrivals and the scratch buffers
  // that assemble their selections are channels last too. Graph inputs and
  // outputs stay row-major.
  void chooseLayouts();
  void prepareShard(u32 id);

  // ---- running
  void runTask(u32 id);
  void runShard(u32 id);
  void release(const Task& task);
  Buffer allocate(const Slot& slot, bool zeroed = false);
  // Slot s's buffer for this run (allocated, or kept from an earlier run),
  // charged to its device.
  void makeBuffer(u32 s);
  // The view of slot s with its data (a graph input's view, or the buffer's).
  TensorView slotView(u32 s) const;
  std::byte* slotData(u32 s) const {
    return alias_[s] != 0 ? slotViews_[s].data : buffers_[s].data();
  }
  void recordTimes(const std::vector<TaskTime>& times, ExecutionStats& stats) const;
  // Shards, transfers, reduction steps and bytes moved, from the task list.
  void countTasks(ExecutionStats& stats) const;
  void charge(int device, std::int64_t bytes);
  void discharge(int device, std::int64_t bytes);
  TensorBuffers gather();

  const graph::ExpandedGraph& g_;
  const plan::ShardPlan& p_;
  Backend& backend_;
  std::vector<const Buffer*> hostInputs_; // per tensor; null unless a graph input

  std::vector<u32> tileBase_, outCount_; // per op
  u32 transferBase_ = 0, residentBase_ = 0;
  std::vector<Slot> slots_;
  std::vector<Buffer> buffers_; // parallel to slots_: set by the creator, reset by the last user
  // Parallel to slots_ (setup): each slot's view (region, row-major strides,
  // dtype, device, constant; data only for an alias), whether it aliases a
  // graph input, and the bytes charged for it this run.
  std::vector<TensorView> slotViews_;
  std::vector<char> alias_;
  // Per tensor: kept channels last (chooseLayouts; empty: none is).
  std::vector<char> lastTensors_;
  // Small regions the CPU backend keeps across runs (setup): their buffer is
  // taken at the first run and reused by every later one, so a small task
  // neither allocates nor frees (its bytes are still charged and discharged
  // as the simulation counts them).
  std::vector<char> persistent_;
  std::unique_ptr<std::int64_t[]> charged_;
  std::vector<std::unique_ptr<PreparedShard>> prepared_; // per task: shards only
  WorkerLists lists_;
  std::unique_ptr<WorkerPool> pool_; // one thread per worker list but the first
  bool setUp_ = false;
  int blasThreads_ = 0;

  std::vector<Task> tasks_; // in submission order
  std::vector<u32> lastWriter_;
  std::vector<std::vector<u32>> readers_; // per slot: readers since its last write
  std::vector<char> transferSubmitted_;

  std::unique_ptr<std::atomic<int>[]> remaining_; // per slot: uses still to come
  std::unique_ptr<DeviceCounters[]> memory_;      // per plan device
  std::vector<std::vector<char>> separable_;      // per op: separableDims
  std::atomic<std::size_t> assembled_{0};
  std::atomic<std::size_t> split_{0}; // shards run as several kernel calls
  std::atomic<std::size_t> kernelCalls_{0};
  std::atomic<std::int64_t> assembledBytes_{0};

  RankLink* link_ = nullptr;
  int me_ = 0;                  // this rank
  std::vector<int> deviceRank_; // per plan device; all 0 without a link
  std::vector<Role> role_;      // per task
  bool hostBuffers_ = false;    // the backend's buffers are host memory (receive in place)
  Transport transport_ = Transport::None;
  DeviceLink* deviceLink_ = nullptr;    // Transport::Nccl
  std::uint64_t linkDigest_ = 0;        // of the cross-rank transfers in order (prepare)
  std::atomic<bool>* cancel_ = nullptr; // set when a task failed: receives give up
};

} // namespace tapestry::backend::detail
