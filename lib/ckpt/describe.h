// describe.h: the text of `gradshare inspect CKPT`: metadata and tensor shapes.
#pragma once

#include <string>

#include "ckpt/checkpoint.h"

namespace gradshare::ckpt {

std::string describe(const std::string& path, const Checkpoint& checkpoint);

}  // namespace gradshare::ckpt
