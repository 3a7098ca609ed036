## bench times a plan against its prediction and the unsharded single-device
## baseline: at least --repeat runs after --warmup, more (up to --max-repeat)
## until the median is stable. Times vary, and so does whether a median is
## stable and the order of the breakdown's rows (worst first), so only the
## shape of the report is checked; --max-repeat keeps these runs short.
$ cd $TESTDATA && tapestry bench plans/mm_relu_2dev.json --repeat 3 --max-repeat 3 --warmup 1 | grep -v '^note: ' | awk 'NR == 1 {print; next} /^total / {print $1, $2; next} NR <= 10 {print $1}'
bench plans/mm_relu_2dev.json (graph mm_relu, cpu, target test-gpu-2): median of 3 after 1 warm-up
measured
plan
single
speedup
spread
plan
single
where
measured
total operations
total transfers
total reductions
## The breakdown: one row per operation, per transfer group (a tensor over one
## link; partials are moves of a reduction's partial results) and per reduction;
## the worst 10, or with -v all of them.
$ tapestry bench $TESTDATA/plans/mm_relu_2dev.json --repeat 2 --max-repeat 2 --warmup 0 -v | awk '/^(op|transfer|partials|reduction) / {print $1, $2, $3}' | sort
op act (relu,
op mm (matmul,
partials h 0->1
partials h 1->0
reduction h of
transfer h 0->1
transfer h 1->0
transfer w host->0
transfer w host->1
transfer x host->0
transfer x host->1
## Without --max-repeat, bench repeats until stable (at most 50 runs or 10 s).
$ cd $TESTDATA && tapestry bench plans/mm_relu_2dev.json --repeat 3 --warmup 0 | awk 'NR == 1'
bench plans/mm_relu_2dev.json (graph mm_relu, cpu, target test-gpu-2): median of 3 to 50 runs, until stable, after 0 warm-ups
## One run cannot tell whether its time is stable: a note says so.
$ tapestry bench $TESTDATA/graphs/tiny.json --repeat 1 --max-repeat 1 | grep '^note: '
note: plan: one timed run cannot tell whether its time is stable (--max-repeat)
note: single device: one timed run cannot tell whether its time is stable (--max-repeat)
note: 128KiB of weights come from graph inputs not marked constant, so the CPU products pack them anew on every run; mark them "constant": true (import marks an ONNX model's initializers) and they are packed once
$ tapestry --format json bench $TESTDATA/plans/mlp_2dev.json --repeat 2 --max-repeat 2 --warmup 0 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(list(d)); print(list(d["plan"])); print(d["status"], d["graph"], d["repeat"], d["max_repeat"], d["warmup"], d["flops"], d["plan"]["devices"], d["single_device"]["devices"], len(d["plan"]["times_s"]), d["plan"]["flops_per_s"] > 0, d["plan"]["min_s"] <= d["plan"]["median_s"] <= d["plan"]["max_s"], type(d["plan"]["stable"]).__name__); print(list(d["operations"][0])); print(sorted(o["name"] for o in d["operations"])); print(list(d["transfers"][0])); print(len(d["transfers"]), d["reductions"]); print({k: list(v) for k, v in d["totals"].items()})'
['status', 'plan_file', 'graph', 'backend', 'target', 'repeat', 'max_repeat', 'max_seconds', 'warmup', 'flops', 'plan', 'single_device', 'speedup', 'repacked_bytes', 'operations', 'transfers', 'reductions', 'totals', 'devices']
['devices', 'workers', 'blas_threads', 'measured_s', 'predicted_s', 'measured_over_predicted', 'flops_per_s', 'peak_bytes_per_device', 'times_s', 'min_s', 'median_s', 'max_s', 'stable', 'median_moved', 'median_uncertainty']
ok mlp 2 2 0 68587264 2 1 2 True True bool
['name', 'kernel', 'shards', 'measured_s', 'predicted_s', 'ratio']
['fc1', 'fc2', 'fc3', 'relu1', 'relu2', 'softmax']
['tensor', 'from', 'to', 'partials', 'transfers', 'bytes', 'measured_s', 'predicted_s', 'ratio']
24 []
{'operations': ['count', 'measured_s', 'predicted_s', 'ratio'], 'transfers': ['count', 'measured_s', 'predicted_s', 'ratio'], 'reductions': ['count', 'measured_s', 'predicted_s', 'ratio']}
$ tapestry bench $TESTDATA/graphs/tiny.json --repeat 1 -q
$ tapestry bench $TESTDATA/plans/mm_relu_2dev.json --backend cuda 2>&1 | sed -E 's/error: (tapestry was built without the CUDA backend|no CUDA GPU found.*|the CUDA backend cannot execute plans yet.*)/error: CUDA backend unavailable/'
error: CUDA backend unavailable
[exit 4]
$ tapestry bench $TESTDATA/plans/mm_relu_2dev.json --warmup -1
! tapestry: error: --warmup: Value -1 not in range 0 to 100000
[exit 2]
$ tapestry bench $TESTDATA/plans/mm_relu_2dev.json --repeat 5 --max-repeat 3
! tapestry: error: --max-repeat: 3 is less than --repeat 5 (the fewest timed runs)
[exit 2]
$ tapestry bench $TESTDATA/plans/mm_relu_2dev.json --max-seconds -1
! tapestry: error: --max-seconds: -1 is not a time (expected seconds >= 0)
[exit 2]
