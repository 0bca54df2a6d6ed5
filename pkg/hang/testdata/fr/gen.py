#!/usr/bin/env python3
"""Writes the Flight Recorder dumps in this directory.

The dict layout is the one PyTorch documents for an unpickled dump (pytorch/tutorials
unstable_source/flight_recorder_tutorial.rst, "Flight Recorder File Formats", version "2.5"), and
the file naming is torch's (TORCH_NCCL_DEBUG_INFO_TEMP_FILE + rank, read back by
torch/distributed/flight_recorder/components/loader.py). torch's C++ writer pickles with protocol 2;
the JSON variant is the same dict as json (torch._C._distributed_c10d._dump_nccl_trace_json).
Run: python3 gen.py (deterministic).
"""
import json, pickle

T0 = 1724779239936775119

def entry(rec, seq, name, state, sizes, pg=("0", "default_pg"), frames=None):
    done = T0 + seq * 1000000 if state == "completed" else None
    return {
        "frames": frames or [{"name": "all_reduce", "filename": "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", "line": 2696},
                             {"name": "wrapper", "filename": "/opt/conda/lib/python3.10/site-packages/torch/distributed/c10d_logger.py", "line": 83},
                             {"name": "<module>", "filename": "/workspace/crash.py", "line": 44}],
        "record_id": rec, "pg_id": int(pg[0]), "process_group": pg,
        "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
        "profiling_name": name, "time_created_ns": T0 + seq * 1000,
        "input_sizes": sizes, "input_dtypes": ["Float"], "output_sizes": sizes, "output_dtypes": ["Float"],
        "state": state, "time_discovered_started_ns": None if state == "scheduled" else T0 + seq * 2000,
        "time_discovered_completed_ns": done, "retired": state == "completed", "timeout_ms": 600000, "is_p2p": False,
    }

def dump(pgs, entries, status):
    return {"version": "2.5", "pg_config": pgs, "pg_status": status, "entries": entries}

# 1. The tutorial's crash.py: 2 ranks, rank 0 issues an extra all_reduce (seq 3, tensor b [4, 5]);
#    rank 0 waits in #5, which rank 1 never issues (torchfrtrace: "missing ranks: {1}").
pg = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}}
r0 = [entry(0, 1, "nccl:all_reduce", "completed", [[3, 4]]), entry(1, 2, "nccl:all_reduce", "completed", [[3, 4]]),
      entry(2, 3, "nccl:all_reduce", "completed", [[4, 5]]), entry(3, 4, "nccl:all_reduce", "completed", [[3, 4]]),
      entry(4, 5, "nccl:all_reduce", "scheduled", [[3, 4]])]
r1 = [entry(0, 1, "nccl:all_reduce", "completed", [[3, 4]]), entry(1, 2, "nccl:all_reduce", "completed", [[3, 4]]),
      entry(2, 3, "nccl:all_reduce", "completed", [[3, 4]]), entry(3, 4, "nccl:all_reduce", "completed", [[3, 4]])]
st0 = {"0": {"last_enqueued_collective": 5, "last_started_collective": 4, "last_completed_collective": 4}}
st1 = {"0": {"last_enqueued_collective": 4, "last_started_collective": 4, "last_completed_collective": 4}}
for rank, (e, s) in enumerate([(r0, st0), (r1, st1)]):
    with open("tutorial-crash/trace_%d" % rank, "wb") as f:
        pickle.dump(dump(pg, e, s), f, protocol=2)

# 2. 8 ranks, two process groups (default_pg and a tensor-parallel group per node): rank 5 never
#    issues all_reduce #142 of default_pg (it is stuck elsewhere); the others wait in it.
#    JSON dumps, named as TORCH_NCCL_DEBUG_INFO_TEMP_FILE's default.
pgs = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"},
       "1": {"name": "1", "desc": "tp", "ranks": "[0, 1, 2, 3]"}, "2": {"name": "2", "desc": "tp", "ranks": "[4, 5, 6, 7]"}}
for rank in range(8):
    tp = "1" if rank < 4 else "2"
    last = 141 if rank == 5 else 142
    ents = [entry(i, seq, "nccl:all_reduce", "completed", [[4096, 4096]]) for i, seq in enumerate(range(139, 142))]
    ents.append(entry(50, 31, "nccl:all_gather", "completed", [[1024]], pg=(tp, "tp")))
    status = {"0": {"last_enqueued_collective": last, "last_started_collective": last, "last_completed_collective": 141},
              tp: {"last_enqueued_collective": 31, "last_started_collective": 31, "last_completed_collective": 31}}
    if rank != 5:
        ents.append(entry(60, 142, "nccl:all_reduce", "started", [[4096, 4096]]))
    d = dump({k: v for k, v in pgs.items() if k in ("0", tp)}, ents, status)
    with open("straggler-json/nccl_trace_rank_%d.json" % rank, "w") as f:
        json.dump(d, f, indent=1)

# 3. 4 ranks all inside all_gather #57, none completes (a hang inside NCCL or the network),
#    and rank 3 left no dump. Python pickle protocol 5 (what pickle.dump writes by default).
pg = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}}
for rank in range(3):
    ents = [entry(0, 56, "nccl:all_gather", "completed", [[8192]]), entry(1, 57, "nccl:all_gather", "started", [[8192]])]
    st = {"0": {"last_enqueued_collective": 57, "last_started_collective": 57, "last_completed_collective": 56}}
    with open("in-collective-missing/nccl_trace_rank_%d" % rank, "wb") as f:
        pickle.dump(dump(pg, ents, st), f, protocol=5)
