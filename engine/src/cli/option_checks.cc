#include "cli/option_checks.h"

#include <cmath>
#include <sstream>

namespace shardscope::cli {
namespace {

std::string Number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// `accept(value)` says whether a parsed number passes; `rule` is the message's verb phrase.
CLI::Validator NumberCheck(const std::string& rule, const std::string& description,
                           bool (*accept)(double, double), double bound) {
  return CLI::Validator(
      [rule, accept, bound](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value) || std::isnan(value)) {
          return "expects a number, got '" + input + "'";
        }
        return accept(value, bound) ? std::string() : "must be " + rule + ", got " + input;
      },
      description);
}

}  // namespace

CLI::Validator AtLeast(double minimum) {
  return NumberCheck(
      "at least " + Number(minimum), ">= " + Number(minimum),
      [](double v, double bound) { return v >= bound; }, minimum);
}

CLI::Validator GreaterThan(double exclusive) {
  return NumberCheck(
      "greater than " + Number(exclusive), "> " + Number(exclusive),
      [](double v, double bound) { return v > bound; }, exclusive);
}

}  // namespace shardscope::cli
