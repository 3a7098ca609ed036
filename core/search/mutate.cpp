#include "core/search/mutate.hpp"

#include <algorithm>
#include <bit>
#include <deque>

namespace tapestry::search {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

template <typename T> const T& pick(const std::vector<T>& v, Rng& rng) {
  return v[static_cast<std::size_t>(rng.below(v.size()))];
}

int offsetOf(const plan::OpChoice& c) {
  return c.devices.empty() ? 0 : c.devices[0];
}

std::int64_t productExcept(const std::vector<std::int64_t>& split, std::size_t skip) {
  std::int64_t p = 1;
  for (std::size_t d = 0; d < split.size(); ++d) {
    if (d != skip) {
      p *= split[d];
    }
  }
  return p;
}

// A new part count for one dim of one op, or the split of another dim moved
// onto it.
bool moveSplitDim(const SearchSpace& space, plan::PlanChoice& choice, Rng& rng) {
  if (space.splittableOps().empty()) {
    return false;
  }
  const std::size_t i = pick(space.splittableOps(), rng);
  const OpSpace& op = space.op(i);
  plan::OpChoice& c = choice.ops[i];
  std::vector<std::int64_t> split = c.split;
  const std::size_t d = pick(op.dims, rng);
  const std::int64_t others = productExcept(split, d);
  const std::int64_t most = std::min<std::int64_t>(op.extents[d], space.deviceCount() / others);
  std::vector<std::size_t> splitElsewhere;
  for (std::size_t e : op.dims) {
    if (e != d && split[e] > 1) {
      splitElsewhere.push_back(e);
    }
  }
  // The current split[d] is within [1, most], so a different value exists iff most >= 2.
  const bool canSet = most >= 2;
  if (!splitElsewhere.empty() && (!canSet || rng.chance(0.25))) {
    // Move: dim e's parts go to dim d.
    const std::size_t e = pick(splitElsewhere, rng);
    split[d] = std::min(split[e] * split[d], op.extents[d]);
    split[e] = 1;
  } else if (canSet) {
    std::int64_t v = rng.between(1, most - 1);
    if (v >= split[d]) {
      ++v;
    }
    split[d] = v;
  } else {
    return false;
  }
  if (split == c.split) {
    return false;
  }
  c = space.opChoice(std::move(split), offsetOf(c));
  return true;
}

bool movePlacement(const SearchSpace& space, plan::PlanChoice& choice, Rng& rng) {
  const int devices = space.deviceCount();
  if (devices < 2 || choice.ops.empty()) {
    return false;
  }
  const std::size_t i = static_cast<std::size_t>(rng.below(choice.ops.size()));
  plan::OpChoice& c = choice.ops[i];
  const int current = offsetOf(c);
  int offset = static_cast<int>(rng.below(static_cast<std::uint64_t>(devices - 1)));
  if (offset >= current) {
    ++offset;
  }
  c = space.opChoice(c.split, offset);
  return true;
}

// Op i takes neighbour n's split (along the dims that line up) and placement;
// sometimes it keeps its own parts on the dims that do not line up.
bool copyFrom(const SearchSpace& space, plan::PlanChoice& choice, std::size_t i, const Neighbour& n,
              bool keepOwn) {
  const plan::OpChoice& from = choice.ops[n.op];
  std::vector<std::int64_t> split = space.alignedSplit(i, n, from.split);
  if (keepOwn) {
    const std::vector<std::int64_t>& own = choice.ops[i].split;
    std::vector<bool> aligned(split.size(), false);
    for (const auto& pair : n.pairs) {
      aligned[pair.first] = true;
    }
    std::int64_t product = 1;
    for (std::int64_t s : split) {
      product *= s;
    }
    for (std::size_t d = 0; d < split.size(); ++d) {
      if (!aligned[d] && own[d] > 1 && product * own[d] <= space.deviceCount()) {
        split[d] = own[d];
        product *= own[d];
      }
    }
  }
  plan::OpChoice next = space.opChoice(std::move(split), offsetOf(from));
  if (next == choice.ops[i]) {
    return false;
  }
  choice.ops[i] = std::move(next);
  return true;
}

bool moveCopyNeighbour(const SearchSpace& space, plan::PlanChoice& choice, Rng& rng) {
  if (space.connectedOps().empty()) {
    return false;
  }
  const std::size_t i = pick(space.connectedOps(), rng);
  const Neighbour& n = pick(space.neighbours(i), rng);
  return copyFrom(space, choice, i, n, rng.chance(0.5));
}

// A breadth-first region around one op (after, sometimes, a new split for it)
// takes that op's split and placement, neighbour to neighbour.
bool moveSpreadRegion(const SearchSpace& space, plan::PlanChoice& choice, Rng& rng) {
  if (space.connectedOps().empty()) {
    return false;
  }
  const std::size_t start = pick(space.connectedOps(), rng);
  bool changed = false;
  if (rng.chance(0.5) && !space.op(start).dims.empty()) {
    // Re-split the start op first, so the region spreads a new decision.
    const OpSpace& op = space.op(start);
    const std::size_t d = pick(op.dims, rng);
    std::vector<std::int64_t> split(op.extents.size(), 1);
    split[d] = rng.between(1, std::min<std::int64_t>(op.extents[d], space.deviceCount()));
    plan::OpChoice next = space.opChoice(std::move(split), offsetOf(choice.ops[start]));
    changed = next != choice.ops[start];
    choice.ops[start] = std::move(next);
  }
  const std::size_t limit =
      static_cast<std::size_t>(rng.between(2, static_cast<std::int64_t>(space.opCount())));
  std::vector<bool> seen(space.opCount(), false);
  seen[start] = true;
  std::size_t count = 1;
  std::deque<std::size_t> queue{start};
  while (!queue.empty() && count < limit) {
    const std::size_t u = queue.front();
    queue.pop_front();
    for (const Neighbour& n : space.neighbours(u)) {
      if (seen[n.op] || count >= limit) {
        continue;
      }
      seen[n.op] = true;
      ++count;
      // n.op copies from u through n.op's own entry for u.
      const auto& back = space.neighbours(n.op);
      auto it =
          std::find_if(back.begin(), back.end(), [u](const Neighbour& x) { return x.op == u; });
      if (it != back.end()) {
        changed = copyFrom(space, choice, n.op, *it, false) || changed;
      }
      queue.push_back(n.op);
    }
  }
  return changed;
}

} // namespace

Rng::Rng(std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::uint64_t& s : s_) {
    s = splitmix64(state);
  }
}

Rng Rng::forSlot(std::uint64_t seed, std::uint64_t generation, std::uint64_t slot) {
  std::uint64_t state = seed;
  std::uint64_t a = splitmix64(state);
  state = a ^ generation;
  std::uint64_t b = splitmix64(state);
  state = b ^ slot;
  return Rng(splitmix64(state));
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::uint64_t Rng::below(std::uint64_t n) {
  // Rejection of the lowest (2^64 mod n) values leaves exactly uniform residues.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t v = next();
    if (v >= threshold) {
      return v % n;
    }
  }
}

std::int64_t Rng::between(std::int64_t lo, std::int64_t hi) {
  if (hi <= lo) {
    return lo;
  }
  return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
}

double Rng::unit() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

bool copyNeighbour(const SearchSpace& space, plan::PlanChoice& choice, std::size_t i,
                   const Neighbour& n) {
  return copyFrom(space, choice, i, n, false);
}

bool applyMove(const SearchSpace& space, plan::PlanChoice& choice, MoveKind kind, Rng& rng) {
  switch (kind) {
  case MoveKind::SplitDim:
    return moveSplitDim(space, choice, rng);
  case MoveKind::Placement:
    return movePlacement(space, choice, rng);
  case MoveKind::CopyNeighbour:
    return moveCopyNeighbour(space, choice, rng);
  case MoveKind::SpreadRegion:
    return moveSpreadRegion(space, choice, rng);
  }
  return false;
}

bool mutate(const SearchSpace& space, plan::PlanChoice& choice, Rng& rng) {
  int moves = 1;
  while (moves < 4 && rng.chance(0.4)) {
    ++moves;
  }
  bool changed = false;
  for (int m = 0; m < moves; ++m) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      const double r = rng.unit();
      const MoveKind kind = r < 0.40   ? MoveKind::SplitDim
                            : r < 0.60 ? MoveKind::Placement
                            : r < 0.85 ? MoveKind::CopyNeighbour
                                       : MoveKind::SpreadRegion;
      if (applyMove(space, choice, kind, rng)) {
        changed = true;
        break;
      }
    }
  }
  return changed;
}

bool toggleVariant(const std::vector<SearchSpace>& spaces, const GraphVariants& variants,
                   plan::PlanChoice& choice, Rng& rng) {
  const std::size_t count = spaces.size();
  const std::uint32_t from = choice.variant;
  if (count < 2 || from >= count) {
    return false;
  }
  std::vector<std::uint32_t> near;
  std::vector<std::uint32_t> others;
  for (std::uint32_t w = 0; w < count; ++w) {
    if (w == from) {
      continue;
    }
    others.push_back(w);
    // One step: the bits of a step (any one bit without steps), left all on
    // or all off (a single bit always is).
    const std::uint32_t flipped = variants.masks[w] ^ variants.masks[from];
    const std::uint32_t after = variants.masks[w] & flipped;
    const bool listed = variants.steps.empty()
                            ? std::popcount(flipped) == 1
                            : std::find(variants.steps.begin(), variants.steps.end(), flipped) !=
                                  variants.steps.end();
    if (listed && (after == 0 || after == flipped)) {
      near.push_back(w);
    }
  }
  const std::uint32_t to = pick(near.empty() ? others : near, rng);
  const SearchSpace& space = spaces[to];
  const std::vector<std::int64_t>& source = variants.from[to][from];
  plan::PlanChoice out;
  out.variant = to;
  out.relay = choice.relay;
  out.ops.reserve(space.opCount());
  for (std::size_t i = 0; i < space.opCount(); ++i) {
    const OpSpace& op = space.op(i);
    std::vector<std::int64_t> split(op.extents.size(), 1);
    int offset = 0;
    const std::int64_t j = i < source.size() ? source[i] : -1;
    if (j >= 0 && static_cast<std::size_t>(j) < choice.ops.size()) {
      const plan::OpChoice& c = choice.ops[static_cast<std::size_t>(j)];
      for (std::size_t d = 0; d < split.size() && d < c.split.size(); ++d) {
        split[d] =
            op.splittable[d] ? std::min(c.split[d], std::max<std::int64_t>(op.extents[d], 1)) : 1;
      }
      offset = offsetOf(c);
    }
    plan::OpChoice mapped = space.opChoice(split, offset);
    if (!space.contains(i, mapped)) {
      mapped = space.opChoice(std::vector<std::int64_t>(op.extents.size(), 1), 0);
    }
    out.ops.push_back(std::move(mapped));
  }
  choice = std::move(out);
  return true;
}

plan::PlanChoice crossover(const SearchSpace& space, const plan::PlanChoice& a,
                           const plan::PlanChoice& b, Rng& rng) {
  plan::PlanChoice child = a;
  const std::vector<std::size_t>& order = space.graph().order;
  if (order.empty()) {
    return child;
  }
  std::size_t first = static_cast<std::size_t>(rng.below(order.size()));
  std::size_t last = static_cast<std::size_t>(rng.below(order.size()));
  if (first > last) {
    std::swap(first, last);
  }
  for (std::size_t k = first; k <= last; ++k) {
    child.ops[order[k]] = b.ops[order[k]];
  }
  return child;
}

std::uint64_t hashChoice(const plan::PlanChoice& choice) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0x100000001b3ULL;
  };
  for (const plan::OpChoice& c : choice.ops) {
    mix(c.split.size());
    for (std::int64_t s : c.split) {
      mix(static_cast<std::uint64_t>(s));
    }
    mix(static_cast<std::uint64_t>(offsetOf(c)) + 0x51ed27ULL);
  }
  if (choice.variant != 0) {
    mix(0xa5a5a5a5ULL + choice.variant);
  }
  if (!choice.relay) {
    mix(0x5eedf00dULL);
  }
  // Finalize so that nearby choices spread over the whole range.
  std::uint64_t state = h;
  return splitmix64(state);
}

} // namespace tapestry::search
