// tapestry's entry point: everything happens in cli::run, which tests call too.
#include <iostream>
#include <string>
#include <vector>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return tapestry::cli::run(args, std::cout, std::cerr);
}
