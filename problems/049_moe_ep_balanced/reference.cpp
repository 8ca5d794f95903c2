#include <numeric>

#include "reference/moe_ep.h"

// The MoE layer with one EP group: the world (harness/src/reference/moe_ep.h).
namespace problem_049 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) { return moe_ep::reference(ctx, in, *ctx.comm); }

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  return moe_ep::oracle(ctx, in, [&](int) {
    std::vector<int> members(ctx.world);
    std::iota(members.begin(), members.end(), 0);
    return members;
  });
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("moe_ep_balanced", reference, oracle, moe_ep::prepare);

}  // namespace problem_049
