// Internal: the JSON the run file keeps in text columns (shapes, axis names, rank groups,
// per-rank bytes, transfers), written and read with nlohmann-json. Readers are strict: text
// that is not exactly the expected shape (damaged by a corrupt file) is refused, never thrown.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/store/records.h"

namespace shardscope::store::internal {

std::string JsonInts(const std::vector<int64_t>& values);                  // [1,2,3]
std::string JsonIntLists(const std::vector<std::vector<int64_t>>& lists);  // [[0,1],[2,3]]
std::string JsonStrings(const std::vector<std::string>& values);           // ["dp","mp"]
std::string JsonTransfers(const std::vector<TransferRecord>& transfers);   // [[src,dst,[o],[e]]]
// A grid: {"first":0,"members":[[size,stride],...],"groups":[[count,stride],...]}; a list as
// JsonIntLists.
std::string JsonRankGroups(const RankGroups& groups);
// {"runs":[[count,offset_dims,src,dst,offset...,extent...,deltas of the same...],...]}; no
// transfers: [].
std::string JsonTransferList(const TransferList& transfers);

// Each returns false (and leaves *out unspecified) unless `text` is exactly that shape.
// Empty text reads as an empty array.
bool ParseInts(std::string_view text, std::vector<int64_t>* out);
bool ParseIntLists(std::string_view text, std::vector<std::vector<int64_t>>* out);
bool ParseStrings(std::string_view text, std::vector<std::string>* out);
bool ParseTransfers(std::string_view text, std::vector<TransferRecord>* out);
// Either form above (the list forms of older files too). A grid of more than 2^24 ranks or a
// run of no transfers is refused: a damaged file must not make a reader expand without bound.
bool ParseRankGroups(std::string_view text, RankGroups* out);
bool ParseTransferList(std::string_view text, TransferList* out);

}  // namespace shardscope::store::internal
