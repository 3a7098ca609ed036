## Plans saved by another version of the cost model (testdata/plans/stale:
## mm_relu_2dev.json with one prediction edited): run, bench, trace and render
## go on with this version's predictions after a located warning on stderr
## (with -q too), exit 0, and list it under "warnings" in --format json.
## So does a kernel cost of the embedded graph (flops.json: a cost formula
## that changed). What is not a prediction stays an error
## (bad/plans/schedule_task.json).
$ cd $TESTDATA && tapestry run plans/stale/schedule_end.json --check -q
! plans/stale/schedule_end.json:231:14: warning: at /schedule/0/end: stored end 1.2e-05 does not match the simulated 1.0006400000000001e-05
!       "end": 1.2e-05
!              ^
! note: the plan's predicted times and memory are not what this version of tapestry's cost model predicts for it (a plan saved by another version, or edited); this version's predictions are used, and `optimize` again chooses a plan under them
$ cd $TESTDATA && tapestry --format json trace plans/stale/peak_memory.json -o $OLDPWD/t.json 2>/dev/null | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["status"], d["predicted_time_s"], json.dumps(d["warnings"]))'
ok 4.4013472000000005e-05 [{"message": "at /objectives/peak_memory_bytes: stored peak_memory_bytes 640 does not match the simulated 512", "file": "plans/stale/peak_memory.json", "line": 365, "column": 26, "pointer": "/objectives/peak_memory_bytes"}]
[created t.json]
$ cd $TESTDATA && tapestry --format json run plans/stale/objective.json 2>/dev/null | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["status"], d["predicted_time_s"], [w["pointer"] for w in d["warnings"]])'
ok 4.4013472000000005e-05 ['/objectives/time_s']
$ cd $TESTDATA && tapestry --format json bench plans/stale/objective.json --repeat 1 --warmup 0 2>/dev/null | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["status"], d["plan"]["predicted_s"], [w["pointer"] for w in d["warnings"]])'
ok 4.4013472000000005e-05 ['/objectives/time_s']
$ cd $TESTDATA && tapestry render plans/stale/objective.json -o $OLDPWD/p.dot -q && head -c 7 $OLDPWD/p.dot
digraph
! plans/stale/objective.json:364:15: warning: at /objectives/time_s: stored time_s 4.5e-05 does not match the simulated 4.4013472000000005e-05
!     "time_s": 4.5e-05,
!               ^
! note: the plan's predicted times and memory are not what this version of tapestry's cost model predicts for it (a plan saved by another version, or edited); this version's predictions are used, and `optimize` again chooses a plan under them
[created p.dot]
$ cd $TESTDATA && tapestry --format json render plans/stale/objective.json --view timeline -o $OLDPWD/t.dot 2>/dev/null | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["status"], [w["line"] for w in d["warnings"]])'
ok [364]
[created t.dot]
$ cd $TESTDATA && tapestry --format json render plans/mm_relu_2dev.json -o $OLDPWD/p.dot 2>/dev/null | python3 -c 'import json, sys; print("warnings" in json.load(sys.stdin))'
False
$ cd $TESTDATA && tapestry run plans/stale/flops.json --check -q
! plans/stale/flops.json:51:18: warning: at /graph/operations/0/flops: the stored flops 400 disagrees with the expansion, which gives 384 (was the file edited, or expanded with other kernels?)
!         "flops": 400
!                  ^
! note: the graph was expanded with other cost formulas for its kernels (saved by another version, or edited); this version's costs are used
$ cd $TESTDATA && tapestry run bad/plans/schedule_task.json
! bad/plans/schedule_task.json:264:17: error: at /schedule/4/device: stored device 1 does not match the rebuilt 0
!       "device": 1,
!                 ^
[exit 1]
