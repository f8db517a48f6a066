// allreduce/protocol.cpp: the all-reduce strategy's payloads' wire forms.
#include "train/allreduce/protocol.h"

namespace gradshare::train {

}  // namespace gradshare::train
