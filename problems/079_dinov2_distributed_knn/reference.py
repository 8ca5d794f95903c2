import torch
import torch.distributed as dist


def solution(test_features: torch.Tensor, train_features_rank_T: torch.Tensor, train_labels: torch.Tensor,
             max_k: int, group=None):
    """Distributed k-NN of every rank's queries over all ranks' train shards (DINOv2 k-NN evaluation).

    test_features (Q, D): this rank's queries. train_features_rank_T (D, L): this rank's train shard, transposed;
    train_labels (1, L) its labels. Similarities are queries @ train in fp32 (the features multiplied with fp32
    accumulation, not rounded to the input dtype). For each owner in turn, the owner broadcasts its queries, every
    rank takes its local top-max_k, and the owner merges the gathered candidates.
    Returns (sims, labels): this rank's queries' max_k largest similarities over all train items, descending
    (float32, (Q, max_k)), and the labels of those items (int64, (Q, max_k)).
    """
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    train = train_features_rank_T.float()
    result = None
    for owner in range(world):
        queries = test_features.clone() if rank == owner else torch.empty_like(test_features)
        dist.broadcast(queries, src=owner, group=group)
        values, index = (queries.float() @ train).topk(max_k, dim=1)
        labels = train_labels[0][index]
        if rank == owner:
            all_values = [torch.empty_like(values) for _ in range(world)]
            all_labels = [torch.empty_like(labels) for _ in range(world)]
            dist.gather(values, all_values, dst=owner, group=group)
            dist.gather(labels, all_labels, dst=owner, group=group)
            best, pick = torch.cat(all_values, dim=1).topk(max_k, dim=1)
            result = best, torch.cat(all_labels, dim=1).gather(1, pick)
        else:
            dist.gather(values, dst=owner, group=group)
            dist.gather(labels, dst=owner, group=group)
    return result
