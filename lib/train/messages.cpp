// messages.cpp: the shared payloads' wire forms.
#include "train/messages.h"

#include "core/errors.h"

namespace gradshare::train {

void wrong_tag(const comm::ControlMessage& message, comm::Tag expected) {
  throw core::RuntimeError(std::string("expected a ") + tag_name(expected) +
                           " message from rank " + std::to_string(message.source) + ", got a " +
                           tag_name(message.tag));
}

}  // namespace gradshare::train
