#!/usr/bin/env python3
"""Environment steps per second through the Python module `concord`, from a Python loop.

Random actions (drawn up front, so numpy's generator is not timed), CartPole-v1 and
MinAtar/Breakout-v1, 1 to 1024 envs, 1 and 2 threads; sync (step) and async (send/recv with
batch_size = num_envs / 2). Compare with build/bench/env_throughput (the engine from C++) to see
what the Python boundary costs.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_env_throughput.py [--seconds 1.0]
"""

import argparse
import time

import numpy as np

import concord


def measure(env_id, num_envs, num_threads, mode, seconds):
    batch_size = max(1, num_envs // 2) if mode == "async" else None
    envs = concord.make(env_id, num_envs=num_envs, num_threads=num_threads, seed=0, batch_size=batch_size)
    n = int(envs.single_action_space.n)
    rows = envs.batch_size
    actions = np.random.default_rng(0).integers(0, n, size=(64, rows))
    obs, info = envs.reset()
    ids = info.get("env_id")

    def run(iterations):
        nonlocal ids
        for i in range(iterations):
            if mode == "async":
                envs.send(actions[i % 64], ids)
                ids = envs.recv()[4]["env_id"]
            else:
                envs.step(actions[i % 64])

    run(20)  # warm-up: thread start, the engine's chunk-size estimate
    iterations, elapsed = 20, 0.0
    while True:  # grow the run until it lasts `seconds`
        start = time.perf_counter()
        run(iterations)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
        iterations = int(iterations * min(10.0, max(2.0, 1.2 * seconds / max(elapsed, 1e-6))))
    envs.close()
    return iterations * rows / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1", "MinAtar/Breakout-v1"])
    parser.add_argument("--num-envs", nargs="+", type=int, default=[1, 8, 64, 1024])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--modes", nargs="+", default=["sync", "async"], choices=["sync", "async"])
    args = parser.parse_args()

    print(f"{'env':<22}{'num_envs':>9}{'threads':>8}{'mode':>7}{'steps/s':>14}")
    for env_id in args.envs:
        for num_envs in args.num_envs:
            for num_threads in args.threads:
                for mode in args.modes:
                    if mode == "async" and num_envs < 2:
                        continue  # async needs batch_size < num_envs
                    rate = measure(env_id, num_envs, num_threads, mode, args.seconds)
                    print(f"{env_id:<22}{num_envs:>9}{num_threads:>8}{mode:>7}{rate:>14,.0f}", flush=True)


if __name__ == "__main__":
    main()
