"""Stands in for CleanRL's ppo.py and dqn.py in ctest (bench/testdata/check_baseline.sh): takes
their flags and prints their kinds of lines, without torch or Gymnasium, in well under a second.

Episodes end every 50 steps, the first ten with return 10, then 500, so that the first 20-episode
mean of at least 475 comes with episode 29, at global step 1450.
"""
import argparse
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, required=True)
parser.add_argument("--total-timesteps", type=int, required=True)
parser.add_argument("--no-cuda", action="store_true", required=True)
args = parser.parse_args()

print("a line the benchmark must ignore", file=sys.stderr)
start = time.time()
for global_step in range(1, args.total_timesteps + 1):
    if global_step % 50 == 0:
        episode = global_step // 50
        print(f"global_step={global_step}, episodic_return=[{10.0 if episode <= 10 else 500.0}]")
    if global_step % 512 == 0 or global_step == args.total_timesteps:
        time.sleep(0.01)
        print("SPS:", int(global_step / (time.time() - start)))
