// shardscope: the command-line program; everything but main() is in shardscope_cli (app.cc),
// which the tests drive in-process.
#include "cli/command.h"

int main(int argc, char** argv) { return shardscope::cli::RunShardscope(argc, argv); }
