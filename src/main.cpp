#include "cli/cli.hpp"

int main(int argc, char** argv) { return gpuenv::cli::run(argc, argv); }
