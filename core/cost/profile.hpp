// Measured targets (SPEC §6): the `profile:` section that `tapestry calibrate`
// writes into a target. Per kernel family, a table of measured kernel time
// against problem size, once with one device busy and once with every device
// busy at the same time (on a CPU the devices share caches, memory bandwidth
// and, for a plan on fewer devices, the BLAS threads); the fixed cost of one
// executor task (a shard, a transfer, a reduction step). The simulator uses a
// family's table where the profile has one and the roofline figures elsewhere.
// docs/cost-model.md describes the format, how calibrate measures it, and how
// well it predicts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tapestry::cost {

// What a family's table sizes count: the shard's FLOPs (matrix products,
// convolutions) or the bytes it reads and writes (everything memory-bound).
enum class WorkMeasure { Flops, Bytes };

const char* workMeasureName(WorkMeasure measure); // "flops", "bytes"

struct KernelFamily {
  std::string_view name;
  WorkMeasure measure;
  std::string_view doc;
};

// The families a profile may hold, in the order files list them: matmul,
// conv, conv_weights, elementwise, activation, reduction, normalization, copy,
// transpose. conv_weights has no kernels of its own: it is the conv family's
// floor (a convolution that streams its weights for few outputs).
const std::vector<KernelFamily>& kernelFamilies();
const KernelFamily* findKernelFamily(std::string_view name);
// The family of a standard-library kernel ("linear" -> matmul, "concat" ->
// copy); nullptr for a kernel of no family (a user's kernel), which the
// simulator then costs with the roofline figures.
const KernelFamily* familyOfKernel(std::string_view kernel);
// The standard-library kernels of a family, in a fixed order.
std::vector<std::string_view> kernelsOfFamily(std::string_view family);

struct ProfilePoint {
  double size = 0;    // FLOPs or bytes of one shard
  double seconds = 0; // the kernel's time on one device
  bool operator==(const ProfilePoint&) const = default;
};

// Kernel time against size. Between two measured sizes the time is
// interpolated linearly in log(size) and log(time); below the smallest size
// it stays at the smallest time (small kernels cost their latency); above the
// largest it grows in proportion to the size (the largest size's rate).
struct ProfileTable {
  WorkMeasure measure = WorkMeasure::Bytes;
  std::vector<ProfilePoint> alone; // one device busy; sizes strictly increasing
  std::vector<ProfilePoint> all;   // every device busy at once (empty: as alone)
  bool operator==(const ProfileTable&) const = default;

  // The time of a kernel of `size` when `busy` is how far the plan is from
  // one device (0) towards every device of the target (1) running at once:
  // interpolated between the two tables in log(time).
  double time(double size, double busy) const;
  // As time, but below the smallest measured size in proportion to the size
  // (the smallest size's rate): a floor that streams bytes has no latency of
  // its own (the kernel's is in its own table).
  double streamTime(double size, double busy) const;
};

// Interpolation in one table (exposed for tests): see ProfileTable.
double interpolateTime(const std::vector<ProfilePoint>& points, double size);
// Between a one-device table and an every-device table (may be empty), as
// ProfileTable::time does.
double interpolateTime(const std::vector<ProfilePoint>& alone, const std::vector<ProfilePoint>& all,
                       double size, double busy);

// How far predicted speedups over one device were off (Profile::spread) on
// graphs of about `time` seconds on one device.
struct SpreadPoint {
  double time = 0;
  double spread = 0;
  bool operator==(const SpreadPoint&) const = default;
};

struct Profile {
  std::string machine; // what it was measured on, e.g. "AMD EPYC 7B13, 2 cores"
  std::string backend; // "cpu" or "cuda"
  std::string date;    // ISO date of the measurement
  int devices = 1;     // devices busy at once in the `all` tables
  // The executor's fixed cost of one task on a device (dispatch, dependency
  // tracking, synchronization), added to every shard, transfer and reduction step.
  double taskOverhead = 0;
  // Once per run of a plan that keeps more than one device busy: the time
  // until every device is at work (waking the workers), added to the makespan.
  double startOverhead = 0;
  // How far a predicted speedup over one device may be off, relative (0.15:
  // a plan predicted 1.1x faster may run up to 15% slower or faster than
  // that): the largest error calibrate measured on small plans split over
  // every device against one device. `optimize` selects one device when the
  // selected plan's predicted gain is within it. 0: not measured.
  double spread = 0;
  // The spread by the size of the graph: (one-device time, spread) points,
  // times increasing (calibrate: its cases grouped by their predicted
  // one-device time). A split plan of 10 us and one of 10 ms are not
  // mispredicted alike: a fixed cost the model misses weighs on the first,
  // not on the second. Empty: `spread` at every size.
  std::vector<SpreadPoint> spreadByTime;
  // The spread by kernel family (calibrate: matmul, elementwise, activation,
  // normalization, each over its cases of every size): products' speedups
  // are predicted within a few percent where a small `add`'s are not.
  std::map<std::string, double, std::less<>> spreadByFamily;
  // How much faster one device runs a family's kernel with every core of the
  // machine as its threads than with one (calibrate: a large matmul and
  // conv2d). Informative: the `alone` tables already include it.
  std::map<std::string, double, std::less<>> threadScaling;
  // By family name; also by a standard kernel's own name where calibrate
  // measured that kernel apart from its family (sigmoid runs 4x faster than
  // tanh, the activation family's representative).
  std::map<std::string, ProfileTable, std::less<>> kernels;
  // Measured copies by bytes (a transfer's allocation and copy): between two
  // devices and from the host. Empty: the target's links and host figures.
  std::vector<ProfilePoint> linkCopies;
  std::vector<ProfilePoint> hostCopies;
  // The same with every device receiving a copy at once (empty: as above);
  // interpolated like a family's `all` table.
  std::vector<ProfilePoint> linkCopiesAll;
  std::vector<ProfilePoint> hostCopiesAll;
  // Whether a transfer holds its destination device while it copies, as
  // Tapestry's executors do (the destination's worker makes the copy, between
  // its shards, on both backends): the simulator then queues transfers on the
  // device as well as the link. false: copies overlap with compute (copy
  // engines).
  bool copiesOnDevice = true;
  // The last-level cache of the machine measured (bytes; calibrate reads the
  // CPU's), 0 where not known. A graph whose constant inputs outgrow it reads
  // them from memory on every run, not from the cache its kernels' tables
  // were measured in: the simulator then floors a shard's time at streaming
  // the constant bytes it reads at the elementwise table's rate beyond the
  // cache (docs/cost-model.md).
  std::int64_t cacheBytes = 0;
  // How far apart calibrate's two timings of each table point were (the
  // slower over the faster, less 1): their median and their largest. Each
  // point keeps its faster time; a machine that was busy in stretches while
  // it was measured shows here. Informative. 0: not timed twice.
  double passDifference = 0;
  double passDifferenceMax = 0;
  bool operator==(const Profile&) const = default;

  // Whether calibrate timed the tables twice (a pass difference to report).
  bool timedTwice() const { return passDifference > 0 || passDifferenceMax > 0; }

  // The spread that a plan whose graph takes `singleTime` seconds on one
  // device is weighed against: spreadByTime interpolated in log(time), the
  // nearest end's spread outside it; `spread` without it.
  double spreadAt(double singleTime) const;
  // The spread a graph's plans are weighed against: each family's spread
  // weighted by its share of the graph's one-device time (`timeByFamily`:
  // seconds by family name, "" for kernels of none); a family without a
  // spread of its own counts with spreadAt(singleTime), as does everything
  // when the profile has no spread by family or the times are all 0.
  double spreadFor(const std::map<std::string, double, std::less<>>& timeByFamily,
                   double singleTime) const;

  const ProfileTable* table(std::string_view family) const;
  // The table that costs `kernel`: its own, else its family's (nullptr: none).
  const ProfileTable* tableFor(std::string_view kernel) const;
  // The table below which a FLOPs-measured `kernel` does not run, by its
  // shard's bytes: conv_weights for a convolution when the profile has it,
  // else elementwise (nullptr: none). A bytes-measured kernel has none, nor
  // does a kernel of no family (the simulator costs it by the roofline).
  const ProfileTable* floorFor(std::string_view kernel) const;
};

// A profile's tables in the order files list them: each family, then the
// kernels of that family measured apart from it (target YAML and JSON).
struct ProfileEntry {
  std::string_view name;
  std::string doc;
  const ProfileTable* table;
};
std::vector<ProfileEntry> profileEntries(const Profile& p);

} // namespace tapestry::cost
