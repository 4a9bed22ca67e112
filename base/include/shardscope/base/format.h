// Human-readable figures, the same in every printout (CLI, summaries, viewer, errors).
// Bytes use the binary family (B, KiB, MiB, GiB); durations us, ms and s.
#pragma once

#include <string>

namespace shardscope {

// "512 B", "1.5 KiB", "12.34 MiB", "2.00 GiB"; negative counts keep their sign. A double, so
// that estimates beyond int64 (planned memory) print instead of overflowing a conversion.
std::string FormatBytes(double bytes);

// "12.3 us", "4.56 ms", "1.234 s"; "0" for zero and "-" for NaN (nothing measured).
std::string FormatSeconds(double seconds);

// A wall-clock span rounded to whole seconds: "m:ss" under an hour, else "h:mm:ss".
std::string FormatClock(double seconds);

}  // namespace shardscope
