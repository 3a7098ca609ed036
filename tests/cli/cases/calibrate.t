## calibrate measures this machine through the CPU backend and the executor
## and writes a target with a measured profile (docs/cost-model.md). Times
## vary, so a tiny budget (a smoke test) and only the shape is checked.
## The file is a target like any other, and --target local now uses it. It
## records the CPU's last-level cache as sysfs gives it, and the spread of
## predicted speedups by kernel family, convolutions among them.
## Bad flags are usage errors; the CUDA backend without a GPU exits 4.
$ tapestry --format json calibrate --budget-seconds 0.3 -o t.yaml | python3 -c 'import json, os, sys; d = json.load(sys.stdin); print(list(d)); print(d["status"], d["backend"], d["families"], d["output"], d["saved"] == os.environ["XDG_CACHE_HOME"] + "/tapestry/calibration/" + os.path.basename(d["saved"]), d["task_overhead_s"] >= 0)'
['status', 'backend', 'machine', 'devices', 'seconds', 'task_overhead_s', 'pass_difference', 'families', 'saved', 'output']
ok cpu ['activation', 'conv', 'conv_weights', 'copy', 'elementwise', 'exp', 'gelu', 'layernorm', 'matmul', 'maxpool2d', 'normalization', 'reduction', 'sigmoid', 'transpose'] t.yaml True True
[created t.yaml]
$ tapestry calibrate --budget-seconds 0.2 --no-save -o t.yaml -q && tapestry optimize $TESTDATA/graphs/tiny.json --target t.yaml --iterations 5 -o p.json -q && python3 -c 'import glob, json; t = json.load(open("p.json"))["target"]; c = [(int(open(d + "/level").read()), open(d + "/size").read().strip()) for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*") if open(d + "/type").read().strip() != "Instruction"]; s = max(c)[1] if c else "0"; n = int(s.rstrip("KMG")) * {"K": 1024, "M": 1048576, "G": 1073741824}.get(s[-1], 1); print(t["name"], sorted(t["profile"]["kernels"]), t["profile"]["backend"], t["profile"].get("last_level_cache", 0) == n, sorted(t["profile"]["spread_by_family"]))'
local ['activation', 'conv', 'conv_weights', 'copy', 'elementwise', 'exp', 'gelu', 'layernorm', 'matmul', 'maxpool2d', 'normalization', 'reduction', 'sigmoid', 'transpose'] cpu True ['activation', 'conv', 'elementwise', 'matmul', 'normalization']
[created p.json]
$ tapestry optimize $TESTDATA/graphs/tiny.json --iterations 5 -o p.json | grep 'target local'
  target local: roofline figures, not measured (run `tapestry calibrate` to measure this machine)
$ tapestry calibrate --budget-seconds 0.2 -q && tapestry optimize $TESTDATA/graphs/tiny.json --iterations 5 -o p.json | grep 'target local' | sed "s|$XDG_CACHE_HOME|CACHE|; s|calibration/cpu-.*yaml|calibration/KEY.yaml|"
  target local: this machine's calibration (CACHE/tapestry/calibration/KEY.yaml)
$ tapestry calibrate --budget-seconds 0.01
! tapestry: error: --budget-seconds: expected a number of seconds of at least 0.05
[exit 2]
$ tapestry calibrate --devices 0
! tapestry: error: --devices: Value 0 not in range 1 to 65536
[exit 2]
$ tapestry calibrate --backend tpu
! tapestry: error: --backend: tpu not in {cpu,cuda}
[exit 2]
$ tapestry calibrate --backend cuda 2>&1 | sed -E 's/error: (tapestry was built without the CUDA backend|no CUDA GPU found.*)/error: CUDA backend unavailable/'
error: CUDA backend unavailable
[exit 4]
$ tapestry calibrate --budget-seconds 0.1 -o /nonexistent-dir/t.yaml --no-save 2>&1 | sed 's/: No such file.*/: .../'
/nonexistent-dir/t.yaml: error: cannot write output file: no directory /nonexistent-dir
[exit 1]
