// tapestry's entry point: everything happens in cli::run, which tests call too.
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "core/diag/interrupt.hpp"

int main(int argc, char** argv) {
  tapestry::interrupt::install();
  // A closed pipe (`tapestry expand g.json | head -1`) is a write error reported
  // below with exit 1, never death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv, argv + argc);
  int code = tapestry::cli::run(args, std::cout, std::cerr);
  std::cout.flush();
  if (!std::cout && code == 0) {
    std::cerr << "tapestry: error: cannot write to standard output (closed pipe?)\n";
    code = 1;
  }
  return code;
}
