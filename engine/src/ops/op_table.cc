#include <array>

#include "ops/op_registry.h"
#include "shardscope/base/names.h"

namespace shardscope {
namespace {

constexpr std::array<OpDef, kNumOps> kOpTable = {{
#define SHARDSCOPE_OP_ENTRY(name, in, out) \
  {OpKind::k##name, #name, in, out, &name##Shape, &name##Forward, &name##Grad},
    SHARDSCOPE_OP_LIST(SHARDSCOPE_OP_ENTRY)
#undef SHARDSCOPE_OP_ENTRY
}};

constexpr bool TableMatchesEnum() {
  for (int i = 0; i < kNumOps; ++i) {
    if (static_cast<int>(kOpTable[i].kind) != i) return false;
    if (kOpTable[i].shape == nullptr || kOpTable[i].forward == nullptr ||
        kOpTable[i].grad == nullptr)
      return false;
  }
  return true;
}
static_assert(TableMatchesEnum(), "operator table out of order or incomplete");

}  // namespace

const OpDef& GetOpDef(OpKind op) { return kOpTable[static_cast<int>(op)]; }
const char* OpName(OpKind op) { return GetOpDef(op).name; }
int OpNumInputs(OpKind op) { return GetOpDef(op).num_inputs; }
int OpNumOutputs(OpKind op) { return GetOpDef(op).num_outputs; }

Result<OpKind> OpFromName(const std::string& name) {
  std::string known;
  std::vector<std::string> names;
  for (const OpDef& def : kOpTable) {
    if (name == def.name) return def.kind;
    known += known.empty() ? "" : ", ";
    known += def.name;
    names.push_back(def.name);
  }
  return Status::Invalid("unknown operator '" + name + "'" + DidYouMean(name, names) +
                         " (known: " + known + ")");
}

Status ExpectRank(const char* what, const Shape& shape, int rank) {
  if (static_cast<int>(shape.size()) == rank) return Status::Ok();
  return Status::Invalid(std::string(what) + " must have rank " + std::to_string(rank) + ", got " +
                         ShapeToString(shape));
}

Result<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return Status::Invalid("shapes " + ShapeToString(a) + " and " + ShapeToString(b) +
                             " do not broadcast (dimension " + std::to_string(i) + ": " +
                             std::to_string(da) + " vs " + std::to_string(db) + ")");
    }
    out[i] = std::max(da, db);
  }
  return out;
}

Result<int64_t> NormalizeAxis(int64_t axis, int rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return Status::Invalid("axis " + std::to_string(axis) + " out of range for rank " +
                           std::to_string(rank));
  }
  return a;
}

}  // namespace shardscope
