// Text read from a run file, made safe to print on a terminal.
//
// A run file is input: its names may hold terminal escapes (ESC, C1 controls), bidirectional
// overrides or invalid UTF-8. EscapeControls writes each such character as a visible escape
// (\u001b, \u202e; \xff for a byte that is not UTF-8), so nothing from the file can move the
// cursor, recolour the terminal or reorder the text after it. JSON stays valid JSON.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shardscope::store {

struct EscapeOptions {
  bool keep_newlines = false;  // '\n' passes (whole reports); else it is escaped (one cell)
  // Longer text is cut at a character boundary and ends with "... (N bytes)".
  size_t max_bytes = std::string_view::npos;
};

// Escaping escaped text again changes nothing (unless it was cut).
std::string EscapeControls(std::string_view text, const EscapeOptions& options = {});

// Whether EscapeControls would change anything but the length.
bool HasControls(std::string_view text, bool allow_newlines);

}  // namespace shardscope::store
