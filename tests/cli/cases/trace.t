## tapestry trace, run --trace, bench --trace: Chrome traces for Perfetto
## (docs/reference/cli.md#trace). tests/unit/test_trace.cpp parses the traces
## and checks them against the format; here: summaries, JSON keys, and every
## bad input and output with its message and exit code.
$ tapestry trace --help
Write a plan's predicted schedule as a Chrome trace (open it in Perfetto); run --trace and bench --trace add a measured run beside it
Usage: tapestry trace [OPTIONS] PLAN

Positionals:
  PLAN TEXT REQUIRED          Plan (plan/v1), or a graph as the single-device plan (graph/v1, expanded/v1); - for stdin

Options:
  -h,--help                   Print this help message and exit
  --help-all                  Print help for every subcommand and exit
  -o,--output TEXT=-          Trace file (Chrome trace JSON), - for stdout
  -k,--kernels TEXT=[] ...    Extra metakernel YAML file or directory (repeatable)

$ tapestry trace $TESTDATA/plans/mm_relu_2dev.json -o mm.trace.json
traced mm_relu (predicted on test-gpu-2: 16 slices on 6 tracks, 20 flows, 44.01us) -> mm.trace.json
[created mm.trace.json]
$ tapestry trace $TESTDATA/plans/mm_relu_2dev.json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(list(d), d["displayTimeUnit"], d["otherData"]["tapestry"], sorted({e["ph"] for e in d["traceEvents"]}))'
['displayTimeUnit', 'otherData', 'traceEvents'] ns trace/v1 ['C', 'M', 'X', 'f', 's']
$ tapestry --format json trace $TESTDATA/plans/mlp_2dev.json -o mlp.trace.json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(list(d)); print(d["status"], d["graph"], d["devices"], d["output"])'
['status', 'plan', 'graph', 'target', 'devices', 'tracks', 'slices', 'flows', 'predicted_time_s', 'output', 'bytes']
ok mlp 2 mlp.trace.json
[created mlp.trace.json]
$ tapestry trace $TESTDATA/graphs/tiny.json -o - -v | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["traceEvents"]) > 0)'
True
! traced tiny (predicted on local: 11 slices on 3 tracks, 10 flows, 140.3us) -> <stdout>
## Bad inputs: exit 1, located, no file left behind.
$ tapestry trace missing.json -o t.json
! missing.json: error: cannot open file: No such file or directory
[exit 1]
$ mkdir d && tapestry trace d -o t.json
! d: error: is a directory, expected a plan or graph file
[exit 1]
[created d]
$ cd $TESTDATA && tapestry trace bad/plans/selection.json -o $OLDPWD/t.json
! bad/plans/selection.json:109:46: error: at /operations/mm/shards/1/selections/inputs/W/0/range: selection zr[2:3, 0:6] does not match the IPF projection zr[2:4, 0:6]
!               "W": [{"tensor": "w", "range": {"start": [2, 0], "end": [3, 6]}}]
!                                              ^
[exit 1]
$ echo '{"tapestry": "front/v1"}' > f.json && tapestry trace f.json -o t.json
! f.json:1:14: error: at /tapestry: unknown format "front/v1" (expected "plan/v1", "graph/v1" or "expanded/v1")
! {"tapestry": "front/v1"}
!              ^
[exit 1]
[created f.json]
## Bad outputs: found before the plan is read.
$ tapestry trace $TESTDATA/plans/mm_relu_2dev.json -o nowhere/t.json
! nowhere/t.json: error: cannot write output file: No such file or directory
[exit 1]
$ mkdir e && tapestry trace $TESTDATA/plans/mm_relu_2dev.json -o e
! e: error: cannot write output file: is a directory
[exit 1]
[created e]
$ tapestry --format json trace $TESTDATA/plans/mm_relu_2dev.json -o nowhere/t.json
{
  "status": "error",
  "exit_code": 1,
  "error": {
    "message": "cannot write output file: No such file or directory",
    "file": "nowhere/t.json"
  }
}
! nowhere/t.json: error: cannot write output file: No such file or directory
[exit 1]
$ tapestry trace
! tapestry: error: PLAN is required
[exit 2]
## run --trace and bench --trace: the measured run beside the prediction, two processes.
$ tapestry run $TESTDATA/plans/mm_relu_2dev.json --trace run.trace.json 2>&1 | grep '^trace'
trace (measured beside predicted) -> run.trace.json
[created run.trace.json]
$ python3 -c 'import json; d=json.load(open("run.trace.json")); print([p["name"].split(" ")[0] for p in d["otherData"]["processes"]])' && rm run.trace.json
['predicted', 'measured']
$ tapestry --format json run $TESTDATA/plans/mm_relu_2dev.json --trace r.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["trace"])' && rm r.json
r.json
$ tapestry bench $TESTDATA/plans/mm_relu_2dev.json --repeat 3 --max-repeat 3 --warmup 0 --trace b.json | grep '^trace' | sed -E 's/run, [0-9] of/run, N of/' && rm b.json
trace -> b.json (the prediction beside the median run, N of 3)
$ tapestry --format json bench $TESTDATA/plans/mm_relu_2dev.json --repeat 3 --max-repeat 3 --warmup 0 --trace b.json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(list(d["trace"]), d["trace"]["output"], [list(x) for x in d["devices"]][0], len(d["devices"]))' && rm b.json
['output', 'run'] b.json ['device', 'measured_busy_s', 'predicted_busy_s', 'ratio'] 2
$ tapestry run $TESTDATA/plans/mm_relu_2dev.json --trace nowhere/r.json
! nowhere/r.json: error: cannot write output file: No such file or directory
[exit 1]
$ tapestry bench $TESTDATA/plans/mm_relu_2dev.json --trace -
! tapestry: error: --trace: expected a file name (standard output carries the report)
[exit 2]
$ mkdir f && tapestry bench $TESTDATA/plans/mm_relu_2dev.json --trace f
! f: error: cannot write output file: is a directory
[exit 1]
[created f]
## The trace read back: render draws its timelines (predicted above measured).
$ tapestry run $TESTDATA/plans/mm_relu_2dev.json -q --trace r.json && tapestry render r.json -o r.svg && python3 -c 'import xml.dom.minidom; xml.dom.minidom.parse("r.svg"); print("svg ok")' && rm r.json r.svg
rendered mm_relu (timeline view, 32 nodes) -> r.svg (svg)
svg ok
$ echo '{"traceEvents": [], "otherData": {"tapestry": "trace/v0"}}' > t.json && tapestry render t.json -o t.svg
! t.json:1:47: error: at /otherData/tapestry: unknown trace format "trace/v0" (expected "trace/v1")
! {"traceEvents": [], "otherData": {"tapestry": "trace/v0"}}
!                                               ^
[exit 1]
[created t.json]
$ echo '{"traceEvents": []}' > t.json && tapestry render t.json --view plan
! tapestry: error: --view plan cannot draw t.json: it is a trace file (use --view timeline)
[exit 2]
