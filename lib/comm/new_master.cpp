// new_master.cpp: choose_new_master.
#include "comm/new_master.h"

#include <algorithm>

namespace gradshare::comm {

int choose_new_master(std::span<const Survivor> survivors, int first_worker, int decider,
                      bool replace) {
  const auto beside_server = [&](const Survivor& candidate) {
    return std::any_of(survivors.begin(), survivors.end(), [&](const Survivor& other) {
      return other.logical > 0 && other.logical < first_worker && other.node == candidate.node;
    });
  };
  const auto is_spare = [](const Survivor& s) { return s.logical < 0; };
  const auto first = [&](auto&& wanted) {
    int best = -1;
    for (std::size_t i = 0; i < survivors.size(); ++i) {
      if (!wanted(survivors[i])) continue;
      // Spares in round order; workers by logical rank.
      if (best < 0 || (!is_spare(survivors[i]) &&
                       survivors[i].logical < survivors[static_cast<std::size_t>(best)].logical))
        best = static_cast<int>(i);
    }
    return best;
  };
  if (replace) {
    if (int spare = first([&](const Survivor& s) { return is_spare(s) && !beside_server(s); });
        spare >= 0)
      return spare;
  }
  if (int worker =
          first([&](const Survivor& s) { return s.logical >= first_worker && !beside_server(s); });
      worker >= 0)
    return worker;
  if (replace) {
    if (int spare = first(is_spare); spare >= 0) return spare;
  }
  return decider;
}

}  // namespace gradshare::comm
