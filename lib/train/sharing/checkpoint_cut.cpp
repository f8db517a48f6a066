// sharing/checkpoint_cut.cpp: CheckpointCut.
#include "train/sharing/checkpoint_cut.h"

#include <string>

#include "core/errors.h"

namespace gradshare::train {

CheckpointCut::CheckpointCut(std::span<const float> parameters, const std::vector<int>& workers)
    : parameters_(parameters.begin(), parameters.end()) {
  for (int w : workers) cuts_[w] = std::nullopt;
}

CheckpointCut::CheckpointCut(std::uint64_t cut, const std::vector<int>& workers)
    : aggregated_cut_(cut) {
  for (int w : workers) cuts_[w] = std::nullopt;
}

void CheckpointCut::apply(const codec::ParsedMessage& message) {
  std::string error;
  // The master applied the same message a moment ago: it is well-formed.
  GS_CHECK(codec::apply_parsed(message, parameters_, &error), error);
}

void CheckpointCut::applied(const codec::ParsedMessage& message) {
  if (aggregated_cut_) return;
  const auto cut = cuts_.find(static_cast<int>(message.header.origin));
  if (cut == cuts_.end()) {
    apply(message);
  } else if (!cut->second) {
    held_[cut->first].emplace_back(message.bytes.begin(), message.bytes.end());
  } else if (message.header.seq <= *cut->second) {
    apply(message);
  }
}

void CheckpointCut::set_cut(int worker, std::uint64_t sent_seq) {
  const auto cut = cuts_.find(worker);
  GS_CHECK(cut != cuts_.end(), "a checkpoint reply from rank " + std::to_string(worker) +
                                   ", which was not asked");
  cut->second = sent_seq;
  if (aggregated_cut_) return;
  for (const auto& bytes : held_[worker]) {
    codec::ParsedMessage message;
    std::string error;
    GS_CHECK(codec::parse_message(bytes, parameters_.size(), message, &error), error);
    if (message.header.seq <= sent_seq) apply(message);
  }
  held_.erase(worker);
}

bool CheckpointCut::copy_due(const UpdateExchange& exchange) const {
  return aggregated_cut_ && parameters_.empty() && exchange.cut_complete(*aggregated_cut_);
}

void CheckpointCut::copy(std::span<const float> parameters) {
  GS_CHECK(aggregated_cut_ && parameters_.empty(), "the cut's parameters copied twice");
  parameters_.assign(parameters.begin(), parameters.end());
}

bool CheckpointCut::complete(const UpdateExchange& exchange) const {
  if (aggregated_cut_) {
    for (const auto& [worker, cut] : cuts_)
      if (!cut) return false;
    return !parameters_.empty();
  }
  for (const auto& [worker, cut] : cuts_)
    if (!cut || exchange.version_vector()[static_cast<std::size_t>(worker)] < *cut) return false;
  return true;
}

std::vector<std::uint64_t> CheckpointCut::version_vector(const UpdateExchange& exchange) const {
  auto versions = exchange.version_vector();
  for (const auto& [worker, cut] : cuts_)
    if (cut) versions[static_cast<std::size_t>(worker)] = *cut;
  return versions;
}

}  // namespace gradshare::train
