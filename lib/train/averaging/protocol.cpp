// averaging/protocol.cpp: parameter averaging's payloads' wire forms.
#include "train/averaging/protocol.h"

namespace gradshare::train {

void AveragingReport::add(const AveragingReport& o) {
  StepCounts::add(o);
  rounds += o.rounds;
  bytes += o.bytes;
  wait_sum += o.wait_sum;
  wait_max = std::max(wait_max, o.wait_max);
  seconds += o.seconds;
}

}  // namespace gradshare::train
