#include "reference/moe_ep.h"

// The MoE layer within problem.json's "ep" groups (harness/src/reference/moe_ep.h).
namespace problem_051 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) { return moe_ep::reference(ctx, in, ctx.group("ep")); }

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  return moe_ep::oracle(ctx, in, [&](int r) { return ctx.group_of("ep", r); });
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("moe_ep_narrow", reference, oracle, moe_ep::prepare);

}  // namespace problem_051
