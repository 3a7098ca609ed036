## bench times a plan (median of --repeat after --warmup) against its prediction
## and the unsharded single-device baseline; times vary, so only the shape of
## the report is checked.
$ cd $TESTDATA && tapestry bench plans/mm_relu_2dev.json --repeat 3 --warmup 1 | awk '{print $1}'
bench
measured
plan
single
speedup
$ tapestry --format json bench $TESTDATA/plans/mlp_2dev.json --repeat 2 --warmup 0 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(list(d)); print(list(d["plan"])); print(d["status"], d["graph"], d["repeat"], d["warmup"], d["flops"], d["plan"]["devices"], d["single_device"]["devices"], len(d["plan"]["times_s"]), d["plan"]["flops_per_s"] > 0)'
['status', 'plan_file', 'graph', 'backend', 'target', 'repeat', 'warmup', 'flops', 'plan', 'single_device', 'speedup']
['devices', 'workers', 'blas_threads', 'measured_s', 'predicted_s', 'measured_over_predicted', 'flops_per_s', 'peak_bytes_per_device', 'times_s']
ok mlp 2 0 68587264 2 1 2 True
$ tapestry bench $TESTDATA/graphs/tiny.json --repeat 1 -q
$ tapestry bench $TESTDATA/plans/mm_relu_2dev.json --backend cuda 2>&1 | sed -E 's/error: (tapestry was built without the CUDA backend|no CUDA GPU found.*|the CUDA backend cannot execute plans yet.*)/error: CUDA backend unavailable/'
error: CUDA backend unavailable
[exit 4]
$ tapestry bench $TESTDATA/plans/mm_relu_2dev.json --warmup -1
! tapestry: error: --warmup: Value -1 not in range 0 to 100000
[exit 2]
