"""The GPU run's steps and the book's upkeep, one job and one entry each: `python3 -m tools.NAME --help`.

ci/gpu.sh calls the steps: versions, ceilings, crosscheck, bank_conflicts, l2_schedule, tune, execute and
prune_results, and small_shapes and multicast_probe as the workloads compute-sanitizer inspects. set_repository
names the book's public repository. They import `helpers`; nothing in `helpers` imports them.
"""
