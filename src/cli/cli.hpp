#pragma once

namespace gpuenv::cli {

/// The whole program: parses the command line, runs one command, returns the process exit code.
int run(int argc, char** argv);

}  // namespace gpuenv::cli
