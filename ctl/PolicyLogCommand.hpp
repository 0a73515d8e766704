#pragma once
// kovsctl policy log [--follow] [--json]: the agent's policy log (docs/policy.md,
// "Policy logging"), one line an entry; --follow asks again every half
// second for what came after, until Ctrl-C or a closed pipe (`| head`),
// both a clean exit (0).
#include <string>

namespace kovs::ctl {

int policyLog(const std::string& socket, bool follow, bool json);

}  // namespace kovs::ctl
