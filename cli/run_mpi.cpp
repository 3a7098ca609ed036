#include "cli/run_mpi.hpp"

#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>

#include "cli/optimize_mpi.hpp"
#include "core/diag/error.hpp"

#if TAPESTRY_HAVE_MPI
#include "backends/mpi_link.hpp"
#include "core/search/mpi_transport.hpp"
#endif

namespace tapestry::cli {

#if TAPESTRY_HAVE_MPI

int executeOnRanks(backend::RankLink*& slot, const RankCommand& command,
                   const search::LaunchInfo& launch, const GlobalOptions& global, Streams& io,
                   const std::string& what) {
  (void)launch; // MPI itself says who is who
  (void)what;
  search::MpiSession session(true);
  backend::MpiRankLink link;
  slot = &link;
  const bool root = link.rank() == 0;
  std::ostream& silent = silentStream();
  int code = 0;
  try {
    code = command(root ? io.out : silent, root ? io.err : silent);
  } catch (const backend::RanksFailed& e) {
    // Rank e.rank() failed before the ranks met and says why: wait until it
    // has (mpirun ends the job once a rank exits with an error).
    link.exchangeStatus(e.code());
    return e.code();
  } catch (...) {
    code = currentExitCode();
    if (!link.started()) {
      // The others are at their first barrier: meet them there with the code.
      const std::vector<int> codes = link.exchangeStatus(code);
      std::size_t lowest = 0;
      while (lowest < codes.size() && codes[lowest] == 0) {
        ++lowest;
      }
      if (static_cast<int>(lowest) != link.rank()) {
        link.exchangeStatus(code); // a lower rank failed too and reports
        return code;
      }
      const int reported = reportCurrentError(global, io);
      io.out.flush();
      io.err.flush();
      link.exchangeStatus(reported); // the others leave once it is out
      return reported;
    }
    // The others may be waiting for this rank's messages: say why, end them
    // all. One write, so that mpirun forwards the message as one piece.
    std::ostringstream message;
    if (global.format != OutputFormat::Json) {
      message << "rank " << link.rank() << " of " << link.ranks() << ": ";
    }
    Streams captured{io.out, message};
    const int reported = reportCurrentError(global, captured);
    io.err << message.str() << std::flush;
    io.out.flush();
    link.abort(reported);
  }
  // Every rank leaves with rank 0's status (--check's, say), or the first
  // other rank's that is not 0.
  for (int c : link.exchangeStatus(code)) {
    if (c != 0) {
      return c;
    }
  }
  return 0;
}

#else

int executeOnRanks(backend::RankLink*&, const RankCommand&, const search::LaunchInfo& launch,
                   const GlobalOptions&, Streams&, const std::string& what) {
  if (launch.rank != 0) {
    return quietRankExit(static_cast<int>(ExitCode::Usage)); // rank 0 says why
  }
  throw UsageError("this tapestry was built without MPI, so it cannot " + what + " as " +
                   std::to_string(launch.size) +
                   " ranks under mpirun (each would do all of it); rebuild with MPI "
                   "(libopenmpi-dev, see docs/distributed.md) or run one process");
}

#endif

} // namespace tapestry::cli
