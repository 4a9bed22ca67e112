#include "columns.h"

namespace shardscope::store::internal {
namespace {

std::span<const std::string_view> Inserted(const Table& table) {
  return table.generated_id ? table.columns.subspan(1) : table.columns;
}

}  // namespace

std::string ColumnList(std::span<const std::string_view> columns) {
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) out += ", ";
    out += columns[i];
  }
  return out;
}

std::string Placeholders(size_t n) {
  std::string out;
  for (size_t i = 1; i <= n; ++i) {
    if (i > 1) out += ", ";
    out += "?" + std::to_string(i);
  }
  return out;
}

std::string InsertSql(const Table& table) {
  const std::span<const std::string_view> cols = Inserted(table);
  return "INSERT INTO " + std::string(table.name) + " (" + ColumnList(cols) + ") VALUES (" +
         Placeholders(cols.size()) + ")";
}

std::string SelectSql(const Table& table, std::string_view rest) {
  return "SELECT " + ColumnList(table.columns) + " FROM " + std::string(table.name) + " " +
         std::string(rest);
}

std::string AssignmentList(std::span<const std::string_view> columns) {
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::string(columns[i]) + " = ?" + std::to_string(i + 1);
  }
  return out;
}

}  // namespace shardscope::store::internal
