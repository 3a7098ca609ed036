#include "cli/optimize_mpi.hpp"

#include <chrono>
#include <ostream>
#include <streambuf>
#include <string>
#include <thread>

#include "core/diag/error.hpp"

#if TAPESTRY_HAVE_MPI
#include "core/search/mpi_transport.hpp"
#endif

namespace tapestry::cli {

int quietRankExit(int code) {
  std::this_thread::sleep_for(std::chrono::seconds(1));
  return code;
}

namespace {

class NullBuffer : public std::streambuf {
protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

} // namespace

std::ostream& silentStream() {
  static NullBuffer nothing;
  static std::ostream silent(&nothing);
  return silent;
}

#if TAPESTRY_HAVE_MPI

int optimizeOnIslands(driver::OptimizeConfig config, const search::LaunchInfo& launch,
                      const GlobalOptions& global, Streams& io) {
  (void)launch; // MPI itself says who is who
  search::MpiSession session;
  search::MpiTransport transport;
  config.islands = &transport;
  const bool root = transport.rank() == 0;
  std::ostream& silent = silentStream();
  if (!root) {
    config.progress = false;
  }
  try {
    return driver::optimizeCommand(config, root ? io.out : silent, io.err);
  } catch (const search::PeerFailed& e) {
    transport.awaitReport(); // until that rank has reported it
    return e.exitCode();
  } catch (...) {
    // Every rank usually fails alike (the same flags and files): only the
    // lowest one says so, and the others leave once it has.
    const int code = currentExitCode();
    if (transport.fail(code) != transport.rank()) {
      transport.awaitReport();
      return code;
    }
    const int reported = reportCurrentError(global, io);
    io.out.flush();
    io.err.flush();
    transport.awaitReport();
    return reported;
  }
}

#else

int optimizeOnIslands(driver::OptimizeConfig, const search::LaunchInfo& launch,
                      const GlobalOptions&, Streams&) {
  if (launch.rank != 0) {
    return quietRankExit(static_cast<int>(ExitCode::Usage)); // rank 0 says why
  }
  throw UsageError("this tapestry was built without MPI, so it cannot run as " +
                   std::to_string(launch.size) +
                   " ranks under mpirun (they would all write the same files); rebuild with "
                   "MPI (libopenmpi-dev, see docs/distributed.md) or run one process");
}

#endif

} // namespace tapestry::cli
