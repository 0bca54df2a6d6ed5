"""Stand-in for `python -m trl.scripts.sft` in ain's sandbox (pkg/sandbox/data/standins/README.md).

Run by torchrun: the process group comes from the environment torchrun gives each worker
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT). Every step allreduces rank+1 over gloo
and prints the sum, which is n(n+1)/2 only when all n ranks took part. Arguments (trl's) are
accepted and echoed, not used.

What NCCL would print cannot come from this machine: when the sandbox put a plan for this pod in
/run/ain-sandbox (its hostname's .sample, .exit and .seconds), the NCCL lines are the rendered
sample's (made from the simulated fabric: sockets on a node the scenario's port is down, say),
the run lasts at least .seconds, and a run the scenario fails prints the sample's error and exits
with .exit after the first real allreduce.
"""

import os
import socket
import sys
import time

import torch
import torch.distributed as dist

STEPS = 8
PLAN_DIR = "/run/ain-sandbox"


def plan(pod):
    """This pod's plan from the sandbox: (sample lines or None, exit code, minimum seconds)."""
    def read(ext):
        try:
            with open(os.path.join(PLAN_DIR, pod + ext), encoding="utf-8") as f:
                return f.read()
        except OSError:
            return None
    sample = read(".sample")
    return (sample.splitlines() if sample is not None else None,
            int((read(".exit") or "0").strip() or 0), float((read(".seconds") or "0").strip() or 0))


def is_nccl(line):
    return " NCCL " in line or line.startswith("NCCL version")


def nccl_lines(pod, ip, rank, world):
    """The NCCL INFO lines of one rank, in the shapes of the sandbox's samples: IB (with the
    HCA ain's profile set) unless NCCL_IB_DISABLE=1, then sockets. NCCL does not run here."""
    pid = os.getpid()
    tid = pid + 67
    prev, nxt = (rank + world - 1) % world, (rank + 1) % world
    ifname = os.environ.get("NCCL_SOCKET_IFNAME", "eth0").split(",")[0].lstrip("=^") or "eth0"
    out = [f"{pod}:{pid}:{pid} [0] NCCL INFO Bootstrap : Using {ifname}:{ip}<0>"]
    if rank == 0:
        out.append("NCCL version 2.21.5+cuda12.4")
    for var in ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX"):
        if os.environ.get(var):
            out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO {var} set by environment to {os.environ[var]}")
    if os.environ.get("NCCL_IB_DISABLE") == "1":
        out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO NET/Socket : Using [0]{ifname}:{ip}<0>")
        out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO Using network Socket")
        via = "NET/Socket/0"
    else:
        hca = os.environ.get("NCCL_IB_HCA", "mlx5_0").split(",")[0].lstrip("=^").split(":")[0] or "mlx5_0"
        link = "RoCE" if os.environ.get("NCCL_IB_GID_INDEX") else "IB"
        out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO NET/IB : Using [0]{hca}:1/{link} [RO]; OOB {ifname}:{ip}<0>")
        out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO Using network IB")
        via = "NET/IB/0/GDRDMA"
    out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO ncclCommInitRank comm 0x5571c0a41e40 rank {rank} nranks {world} cudaDev 0 nvmlDev 0 busId 18000 commId 0x3b8e1f2a9c4d5e60 - Init START")
    out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO comm 0x5571c0a41e40 rank {rank} nRanks {world} nNodes {world} localRanks 1 localRank 0 MNNVL 0")
    if rank == 0:
        ring = " ".join(str(i) for i in range(world))
        out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO Channel 00/02 :  {ring}")
        out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO Channel 01/02 :  {ring}")
    for ch in ("00", "01"):
        out.append(f"{pod}:{pid}:{pid + 73} [0] NCCL INFO Channel {ch}/0 : {prev}[0] -> {rank}[0] [receive] via {via}")
        out.append(f"{pod}:{pid}:{pid + 73} [0] NCCL INFO Channel {ch}/0 : {rank}[0] -> {nxt}[0] [send] via {via}")
    out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO Connected all rings")
    out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO Connected all trees")
    out.append(f"{pod}:{pid}:{tid} [0] NCCL INFO ncclCommInitRank comm 0x5571c0a41e40 rank {rank} nranks {world} cudaDev 0 nvmlDev 0 busId 18000 commId 0x3b8e1f2a9c4d5e60 - Init COMPLETE")
    return out


def main(argv):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    pod = socket.gethostname()
    ip = socket.gethostbyname(pod)
    out = f"--output_dir={os.path.join(os.sep, 'tmp', 'out')}"
    for a in argv:
        if a.startswith("--output_dir="):
            out = a
    print(f"INFO:__main__:rank {rank}/{world} on {pod}: trl stand-in, arguments: {' '.join(argv)}")
    sample, exit_code, seconds = plan(pod)
    begin = time.monotonic()
    dist.init_process_group("gloo")
    print(f"INFO:__main__:rank {dist.get_rank()}/{dist.get_world_size()}: joined the gloo group at "
          f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}")
    if exit_code:
        t = torch.tensor([float(rank + 1)])
        dist.all_reduce(t)
        for line in sample or []:
            print(line)
        sys.stdout.flush()
        time.sleep(max(0.0, seconds - (time.monotonic() - begin)))
        return exit_code
    lines = [l for l in sample if is_nccl(l)] if sample is not None else nccl_lines(pod, ip, rank, world)
    # A communicator's end is said when the run ends, with the sample's own process id.
    destroy = [l for l in lines if "Destroy COMPLETE" in l]
    for line in lines:
        if "Destroy COMPLETE" not in line:
            print(line)
    if rank == 0:
        print("trainable params: 41,943,040 || all params: 7,657,558,016 || trainable%: 0.5477")
    start = time.monotonic()
    want = world * (world + 1) / 2
    for step in range(1, STEPS + 1):
        t = torch.tensor([float(rank + 1)])
        dist.all_reduce(t)
        got = t.item()
        print(f"ain-standin allreduce: rank {rank} of {dist.get_world_size()} on {pod}: step {step} sum {got:g}")
        if got != want:
            print(f"ain-standin allreduce: rank {rank}: sum {got:g}, want {want:g}", file=sys.stderr)
            return 1
        # A long run (the scenario's completeAfter) spreads its steps over that time.
        time.sleep(max(0.0, (seconds - (time.monotonic() - begin)) / (STEPS - step + 1)))
        if rank == 0:
            loss = 1.8342 * (0.93 ** (step - 1))
            lr = 0.0002 * (1 - (step - 1) / STEPS)
            print(f"{{'loss': {loss:.4f}, 'grad_norm': {0.52 - 0.03 * (step - 1):.4f}, "
                  f"'learning_rate': {lr:.6f}, 'epoch': {step / STEPS:.2f}}}")
    runtime = time.monotonic() - start
    if rank == 0:
        print(f"{{'train_runtime': {runtime:.4f}, 'train_samples_per_second': {16 * STEPS / max(runtime, 1e-3):.1f}, "
              f"'train_steps_per_second': {STEPS / max(runtime, 1e-3):.3f}, 'train_loss': 1.3597, 'epoch': 1.0}}")
        print(f"INFO:__main__:saved LoRA adapter to {out.split('=', 1)[1]} (stand-in: nothing written)")
    dist.barrier()
    dist.destroy_process_group()
    if sample is None:
        destroy = [f"{pod}:{os.getpid()}:{os.getpid() + 67} [0] NCCL INFO comm 0x5571c0a41e40 rank {rank} nranks {world} cudaDev 0 busId 18000 - Destroy COMPLETE"]
    for line in destroy:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
