## What a new user meets on the first walk (issue 19): a directory where a file
## belongs is an input error naming what was expected (exit 1, no internal
## error); a mistyped command gets a "did you mean"; notes that point into the
## built-in standard library name it <stdlib>/FILE and say how to print it; a
## plan made with -k embeds its user templates, so render and run read it alone.
$ mkdir somedir && tapestry expand somedir
! somedir: error: is a directory, expected a graph file
[exit 1]
[created somedir]
$ mkdir dir2 && tapestry optimize dir2 -o p.json
! dir2: error: is a directory, expected a graph file
[exit 1]
[created dir2]
$ mkdir dir3 && tapestry render dir3 -o x.svg
! dir3: error: is a directory, expected a graph, plan or front file
[exit 1]
[created dir3]
$ mkdir dir4 && tapestry run dir4
! dir4: error: is a directory, expected a plan or graph file
[exit 1]
[created dir4]
$ mkdir dir5 && tapestry bench dir5
! dir5: error: is a directory, expected a plan or graph file
[exit 1]
[created dir5]
$ mkdir dir6 && tapestry --format json expand dir6
{
  "status": "error",
  "exit_code": 1,
  "error": {
    "message": "is a directory, expected a graph file",
    "file": "dir6"
  }
}
! dir6: error: is a directory, expected a graph file
[exit 1]
[created dir6]
$ tapestry run $TESTDATA/graphs/tiny.json --inputs $TESTDATA/graphs 2>&1 | sed "s#.*/testdata/#testdata/#"
testdata/graphs/x.npy: error: missing input x: cannot open file: No such file or directory
[exit 1]
$ tapestry bench $TESTDATA/graphs/tiny.json --inputs $TESTDATA/graphs 2>&1 | sed "s#.*/testdata/#testdata/#"
testdata/graphs/x.npy: error: missing input x: cannot open file: No such file or directory
[exit 1]
$ mkdir -p in/x.npy && tapestry run $TESTDATA/graphs/tiny.json --inputs in
! in/x.npy: error: is a directory, expected a .npy file
[exit 1]
[created in]
$ tapestry optimise g.json
! tapestry: error: unknown command "optimise" (did you mean "optimize"?); expected one of: import, expand, kernels, rewrites, optimize, render, run, bench, trace, calibrate
[exit 2]
$ tapestry --format json -q rnu plan.json
{
  "status": "error",
  "exit_code": 2,
  "error": {
    "message": "unknown command \"rnu\" (did you mean \"run\"?); expected one of: import, expand, kernels, rewrites, optimize, render, run, bench, trace, calibrate"
  }
}
! tapestry: error: unknown command "rnu" (did you mean "run"?); expected one of: import, expand, kernels, rewrites, optimize, render, run, bench, trace, calibrate
[exit 2]
$ tapestry kernels -k x.yaml lsit
! tapestry: error: unknown kernels command "lsit" (did you mean "list"?); expected one of: list, show, check
[exit 2]
$ cd $TESTDATA && tapestry expand bad/graphs/bad_perm.json 2>&1 | grep note: | sed -E 's#:[0-9]+:[0-9]+:#:LINE:COL:#'
<stdlib>/shape.yaml:LINE:COL: note: in kernel transpose, where clause "len($perm) == len($shape)" (built in; 'tapestry kernels show transpose' prints it)
[exit 1]
$ printf '%s' '{"tapestry": "graph/v1", "name": "scaled", "tensors": {"x": {"dtype": "float32", "shape": [4, 8]}}, "operations": [{"name": "s", "kernel": "scale", "params": {"factor": 3.5}, "inputs": {"input": "x"}, "outputs": {"result": "y"}}, {"name": "r", "kernel": "relu", "inputs": {"input": "y"}, "outputs": {"result": "z"}}]}' > g.json && tapestry optimize g.json -k $TESTDATA/metakernels/user_ops.yaml --target cpu-2 --seed 1 -q -o p.json && python3 -c 'import json; d=json.load(open("p.json")); print(list(d)[:3], list(d["kernels"]), d["kernels"]["scale"]["source"].splitlines()[0])' && tapestry render p.json -o p.svg && tapestry run p.json --check -q && echo "ran and checked (scale runs from its body)"
['tapestry', 'kernels', 'graph'] ['scale'] scale:
rendered scaled (plan view, 5 nodes) -> p.svg (svg)
ran and checked (scale runs from its body)
[created g.json]
[created p.json]
[created p.svg]
