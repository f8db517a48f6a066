// test_tags.h: tags for the channel tests. lib/comm carries any tag from kFirstTag to kLastTag
// without interpreting it; these name a few, after the messages whose traffic the tests imitate.
#pragma once

#include "comm/control_channel.h"

namespace gradshare::comm::test_tags {

inline constexpr Tag kPartitionRequest{1};
inline constexpr Tag kPartitionGrant{2};
inline constexpr Tag kHeartbeat{3};
inline constexpr Tag kShutdown{4};
inline constexpr Tag kStart{5};
inline constexpr Tag kSharingReport{6};
inline constexpr Tag kSharingDone{7};
inline constexpr Tag kSharingDrained{8};

}  // namespace gradshare::comm::test_tags
